package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Case IDs the table compares against.
const (
	CaseDirect = "direct"
	CaseNginx  = "nginx"
)

// Run is one wrk run of one case in one round, with the CPU the servers used during it.
type Run struct {
	Case        string
	Round       int
	Wrk         WrkResult
	HasProxy    bool          // false for the direct case: nothing between wrk and the upstream
	ProxyCPU    time.Duration // utime+stime of the proxy (and its children) during the run
	UpstreamCPU time.Duration
	// Parts splits ProxyCPU by process when the path holds several (a tunnel: edges, agent,
	// Redis), keyed by the Part* names.
	Parts map[string]time.Duration
}

// ProxyCPUPerRequest is ProxyCPU divided by the requests wrk completed.
func (r Run) ProxyCPUPerRequest() time.Duration { return perRequest(r.ProxyCPU, r.Wrk.Requests) }

// UpstreamCPUPerRequest is UpstreamCPU divided by the requests wrk completed.
func (r Run) UpstreamCPUPerRequest() time.Duration { return perRequest(r.UpstreamCPU, r.Wrk.Requests) }

func perRequest(d time.Duration, n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return d / time.Duration(n)
}

// Row is one case's medians over its rounds.
type Row struct {
	Case                  string
	Label                 string
	Rounds                int
	RPS                   float64
	RPSSpread             float64         // (max-min)/median of req/s over the rounds: how noisy the case was
	RoundRPS              map[int]float64 // req/s by round, to pair with another case's same round
	P50, P99              time.Duration
	HasProxy              bool
	ProxyCPUPerRequest    time.Duration
	UpstreamCPUPerRequest time.Duration
	PartsPerRequest       map[string]time.Duration // median CPU per request of each of Run.Parts
	Errors                int64                    // socket errors and non-2xx/3xx answers, summed over rounds
}

// Summarize takes the median of each measure over the rounds of each case, independently, in the
// order of ids. labels names the cases for the table.
func Summarize(ids []string, labels map[string]string, runs []Run) []Row {
	rows := make([]Row, 0, len(ids))
	for _, id := range ids {
		var rps []float64
		var p50, p99, pcpu, ucpu []time.Duration
		parts := map[string][]time.Duration{}
		row := Row{Case: id, Label: labels[id]}
		if row.Label == "" {
			row.Label = id
		}
		for _, r := range runs {
			if r.Case != id {
				continue
			}
			row.Rounds++
			row.HasProxy = r.HasProxy
			row.Errors += r.Wrk.SocketErrors + r.Wrk.Non2xx3xx
			rps = append(rps, r.Wrk.RequestsPerS)
			if row.RoundRPS == nil {
				row.RoundRPS = map[int]float64{}
			}
			row.RoundRPS[r.Round] = r.Wrk.RequestsPerS
			p50 = append(p50, r.Wrk.P50())
			p99 = append(p99, r.Wrk.P99())
			pcpu = append(pcpu, r.ProxyCPUPerRequest())
			ucpu = append(ucpu, r.UpstreamCPUPerRequest())
			for name, cpu := range r.Parts {
				parts[name] = append(parts[name], perRequest(cpu, r.Wrk.Requests))
			}
		}
		if row.Rounds == 0 {
			continue
		}
		row.RPS = Median(rps)
		if row.RPS > 0 {
			row.RPSSpread = (slices.Max(rps) - slices.Min(rps)) / row.RPS
		}
		row.P50, row.P99 = MedianDuration(p50), MedianDuration(p99)
		row.ProxyCPUPerRequest, row.UpstreamCPUPerRequest = MedianDuration(pcpu), MedianDuration(ucpu)
		if len(parts) > 0 {
			row.PartsPerRequest = map[string]time.Duration{}
			for name, ds := range parts {
				row.PartsPerRequest[name] = MedianDuration(ds)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// tableHeader is the table's first line, in column order.
func tableHeader() []string {
	return []string{
		"case", "req/s", "spread", "p50", "p99", "proxy cpu/req", "upstream cpu/req",
		"req/s vs nginx", "req/s vs direct", "p99 vs nginx", "cpu/req vs nginx", "errors",
	}
}

// Cells renders rows as table cells, ratios against the nginx and direct rows when present.
func Cells(rows []Row) [][]string {
	var nginx, direct *Row
	for i := range rows {
		switch rows[i].Case {
		case CaseNginx:
			nginx = &rows[i]
		case CaseDirect:
			direct = &rows[i]
		}
	}
	out := [][]string{tableHeader()}
	for _, r := range rows {
		proxyCPU := "-"
		if r.HasProxy {
			proxyCPU = FormatDuration(r.ProxyCPUPerRequest)
		}
		cells := []string{
			r.Label,
			fmt.Sprintf("%.0f", r.RPS),
			fmt.Sprintf("%.0f%%", 100*r.RPSSpread),
			FormatDuration(r.P50),
			FormatDuration(r.P99),
			proxyCPU,
			FormatDuration(r.UpstreamCPUPerRequest),
			ratioCell(r, nginx, func(x Row) float64 { return x.RPS }),
			ratioCell(r, direct, func(x Row) float64 { return x.RPS }),
			ratioCell(r, nginx, func(x Row) float64 { return float64(x.P99) }),
			"-",
			fmt.Sprint(r.Errors),
		}
		if r.HasProxy && nginx != nil && nginx.HasProxy {
			cells[10] = ratioCell(r, nginx, func(x Row) float64 { return float64(x.ProxyCPUPerRequest) })
		}
		out = append(out, cells)
	}
	return out
}

// ratioCell is "-" against itself or a missing baseline, so the baseline's own row stays clean.
func ratioCell(r Row, base *Row, measure func(Row) float64) string {
	if base == nil || base.Case == r.Case {
		return "-"
	}
	v, ok := Ratio(measure(r), measure(*base))
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

// WriteTable prints cells with the first column left-aligned and the others right-aligned.
func WriteTable(w io.Writer, cells [][]string) error {
	if len(cells) == 0 {
		return nil
	}
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, row := range cells {
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-len(c))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatDuration prints latencies and CPU costs at a useful precision.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.2fus", float64(d)/float64(time.Microsecond))
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fus", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}
