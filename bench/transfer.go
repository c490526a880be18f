package bench

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Transfer directions, as seen from the client.
const (
	Download = "download"
	Upload   = "upload"
)

// MiB is the unit transfer sizes and CPU per byte are given in.
const MiB = 1 << 20

// TransferSample is one transfer: its size and the time from sending the request to the last
// byte of the answer.
type TransferSample struct {
	Bytes   int64
	Elapsed time.Duration
}

// MBps is the sample's rate in MB/s (10^6 bytes per second); 0 for no time.
func (s TransferSample) MBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds() / 1e6
}

// TransferLine is how the transfer client reports one sample on its standard output.
func TransferLine(s TransferSample) string {
	return fmt.Sprintf("transfer %d %d", s.Bytes, s.Elapsed.Nanoseconds())
}

// ParseTransferOutput reads the transfer client's TransferLine lines; other lines are skipped.
func ParseTransferOutput(out string) ([]TransferSample, error) {
	var samples []TransferSample
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "transfer" {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("transfer line %q: want \"transfer BYTES NANOSECONDS\"", sc.Text())
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("transfer line %q: bad byte count", sc.Text())
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || ns <= 0 {
			return nil, fmt.Errorf("transfer line %q: bad duration", sc.Text())
		}
		samples = append(samples, TransferSample{Bytes: n, Elapsed: time.Duration(ns)})
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("no transfer lines in the client's output")
	}
	return samples, sc.Err()
}

// TransferBatch is one round's sequential transfers of one direction over one path, with the
// CPU the processes between client and upstream spent on them.
type TransferBatch struct {
	Path      string // a case id: direct, tunnel, tunnel-hop
	Direction string
	Round     int
	Samples   []TransferSample
	HasProxy  bool
	ProxyCPU  time.Duration
	Parts     map[string]time.Duration
}

func (b TransferBatch) bytes() int64 {
	var n int64
	for _, s := range b.Samples {
		n += s.Bytes
	}
	return n
}

// ProxyCPUPerMiB is ProxyCPU over the MiB moved.
func (b TransferBatch) ProxyCPUPerMiB() time.Duration {
	n := b.bytes()
	if n <= 0 {
		return 0
	}
	return time.Duration(float64(b.ProxyCPU) / (float64(n) / MiB))
}

// TransferRow is one path and direction over every round.
type TransferRow struct {
	Path, Direction, Label string
	Transfers              int
	Bytes                  int64   // of one transfer (the largest, should they differ)
	MBps                   float64 // median over every transfer of every round
	MinMBps                float64 // the slowest transfer
	Spread                 float64 // (max-min)/median of the rounds' median MB/s
	HasProxy               bool
	ProxyCPUPerMiB         time.Duration // median over the rounds
}

// SummarizeTransfers gives a row per direction and path (downloads first, paths in the order
// given), leaving out those that were not run.
func SummarizeTransfers(paths []string, labels map[string]string, batches []TransferBatch) []TransferRow {
	var rows []TransferRow
	for _, dir := range []string{Download, Upload} {
		for _, path := range paths {
			row := TransferRow{Path: path, Direction: dir, Label: labels[path]}
			if row.Label == "" {
				row.Label = path
			}
			var all, roundMedians []float64
			var cpu []time.Duration
			for _, b := range batches {
				if b.Path != path || b.Direction != dir || len(b.Samples) == 0 {
					continue
				}
				var rates []float64
				for _, s := range b.Samples {
					rates = append(rates, s.MBps())
					row.Bytes = max(row.Bytes, s.Bytes)
				}
				all = append(all, rates...)
				roundMedians = append(roundMedians, Median(rates))
				row.HasProxy = b.HasProxy
				cpu = append(cpu, b.ProxyCPUPerMiB())
			}
			if len(all) == 0 {
				continue
			}
			row.Transfers = len(all)
			row.MBps, row.MinMBps = Median(all), slices.Min(all)
			if m := Median(roundMedians); m > 0 {
				row.Spread = (slices.Max(roundMedians) - slices.Min(roundMedians)) / m
			}
			row.ProxyCPUPerMiB = MedianDuration(cpu)
			rows = append(rows, row)
		}
	}
	return rows
}

func transferRow(rows []TransferRow, path, dir string) *TransferRow {
	for i := range rows {
		if rows[i].Path == path && rows[i].Direction == dir {
			return &rows[i]
		}
	}
	return nil
}

// TransferCells renders the transfer rows, each against direct loopback in its direction.
func TransferCells(rows []TransferRow) [][]string {
	out := [][]string{{"transfer", "path", "n", "MB/s", "slowest MB/s", "spread", "path cpu/MiB", "vs direct"}}
	for _, r := range rows {
		cpu, vs := "-", "-"
		if r.HasProxy {
			cpu = FormatDuration(r.ProxyCPUPerMiB)
		}
		if d := transferRow(rows, CaseDirect, r.Direction); d != nil && r.Path != CaseDirect {
			if v, ok := Ratio(r.MBps, d.MBps); ok {
				vs = fmt.Sprintf("%.2fx", v)
			}
		}
		out = append(out, []string{
			FormatBytes(r.Bytes) + " " + r.Direction, r.Label, strconv.Itoa(r.Transfers),
			fmt.Sprintf("%.0f", r.MBps), fmt.Sprintf("%.0f", r.MinMBps), fmt.Sprintf("%.0f%%", 100*r.Spread), cpu, vs,
		})
	}
	return out
}

// FormatBytes prints a size in whole MiB when it is one, else in bytes.
func FormatBytes(n int64) string {
	if n > 0 && n%MiB == 0 {
		return fmt.Sprintf("%d MiB", n/MiB)
	}
	return fmt.Sprintf("%d B", n)
}
