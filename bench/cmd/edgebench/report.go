package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// printHeader says what was measured on what, so a pasted table can be read on its own.
func (h *harness) printHeader(ctx context.Context) {
	fmt.Printf("edgebench %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("machine: %s, %d CPUs, %s, %s, load average %s\n", cpuModel(), runtime.NumCPU(), kernel(), runtime.Version(), loadAvg())
	versions := []string{"nginx " + firstLine(ctx, h.tools.nginx, "-v"), "wrk " + firstLine(ctx, h.tools.wrk, "--version")}
	if h.edgeBin != "" {
		versions = append(versions, "edge "+firstLine(ctx, h.edgeBin, "version"))
	}
	if h.redis != nil {
		versions = append(versions, "redis "+firstLine(ctx, h.tools.redis, "--version"))
	}
	fmt.Printf("tools: %s\n", strings.Join(versions, "; "))
	clients := "wrk"
	if slices.Contains(h.opts.cases, caseTransfer) {
		clients = "wrk and the transfer client"
	}
	if h.pin {
		fmt.Printf("pinning: %s on CPU %d; %s on CPU %d\n", strings.Join(h.sup.names(), ", "), h.opts.serverCPU, clients, h.opts.clientCPU)
	} else {
		fmt.Println("pinning: none")
	}
	fmt.Printf("load: wrk %d connections, %d thread(s), %s per run, %s warm-up per case, %d interleaved rounds\n",
		h.opts.connections, h.opts.threads, h.opts.duration, h.opts.warmup, h.opts.rounds)
	if h.agent != nil {
		fmt.Printf("tunnel: agent %s connected to edge; tunnel cases also run at 1 connection for %s per round\n",
			agentID, h.latencyDuration())
	}
	if slices.Contains(h.opts.cases, caseTransfer) {
		fmt.Printf("transfer: %d sequential %s downloads and uploads per path and round (after 1 unmeasured), one connection\n",
			h.opts.transfers, bench.FormatBytes(transferSize))
	}
	fmt.Println()
}

// reportRows are the medians of each kind of measurement.
type reportRows struct {
	load, latency []bench.Row
	transfers     []bench.TransferRow
}

// report prints the medians tables and returns their rows.
func (h *harness) report(cases []benchCase, res results) reportRows {
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.id
	}
	labels := caseLabels(cases)
	rows := reportRows{load: bench.Summarize(ids, labels, res.runs)}
	if len(rows.load) > 0 {
		fmt.Printf("medians of %d rounds:\n", h.opts.rounds)
		_ = bench.WriteTable(os.Stdout, bench.Cells(rows.load))
		fmt.Println()
		fmt.Println("cpu/req: utime+stime from /proc/<pid>/stat (nginx: master and worker) over the run, divided by its requests.")
		fmt.Println("req/s: higher is better; p99 and cpu/req: lower is better. spread: (max-min)/median of req/s over the rounds.")
		fmt.Println("errors: socket errors + non-2xx answers.")
	}
	tunnel := slices.ContainsFunc(cases, func(c benchCase) bool { return c.viaAgent })
	if tunnel {
		fmt.Println("tunnel rows: proxy cpu/req is the whole path (edges, agent and, for the hop, Redis); split below.")
		fmt.Printf("\ntunnel cases at %d connections (medians of %d rounds):\n", h.opts.connections, h.opts.rounds)
		_ = bench.WriteTable(os.Stdout, bench.TunnelCells(rows.load))
		fmt.Println("edge: the edge the agent is connected to; edge2: the hop's entry edge; added p50: over the case in 'over'.")
	}
	if len(res.latency) > 0 {
		var lids []string
		for _, c := range latencyCases(cases) {
			lids = append(lids, c.id)
		}
		rows.latency = bench.Summarize(lids, labels, res.latency)
		fmt.Printf("\nlatency at 1 connection (sequential requests, wrk -c1, %s per round; medians of %d rounds):\n", h.latencyDuration(), h.opts.rounds)
		_ = bench.WriteTable(os.Stdout, bench.LatencyCells(rows.latency))
	}
	if len(res.transfers) > 0 {
		rows.transfers = bench.SummarizeTransfers(transferPaths(), transferLabels(), res.transfers)
		fmt.Printf("\ntransfers (median over every transfer of every round; MB = 10^6 bytes):\n")
		_ = bench.WriteTable(os.Stdout, bench.TransferCells(rows.transfers))
		fmt.Println("path cpu/MiB: CPU of the edges, agent and Redis on the path per MiB moved; spread: (max-min)/median of the rounds' medians.")
	}
	if findings := bench.TunnelFindings(rows.load, rows.latency, rows.transfers); len(findings) > 0 {
		fmt.Println("\nfindings:")
		for _, f := range findings {
			fmt.Println("- " + f)
		}
	}
	for _, r := range rows.load {
		if r.RPSSpread > noisySpread {
			fmt.Printf("warning: req/s of %s varied by %.0f%% over the rounds (load average now %s): something else is\n"+
				"using the CPUs; compare ratios, not absolute numbers, or rerun on an idle machine with more rounds.\n",
				r.Case, 100*r.RPSSpread, loadAvg())
			break
		}
	}
	return rows
}

// noisySpread is the req/s spread over rounds above which the table is flagged as noisy: on an
// idle machine rounds agree within a few percent.
const noisySpread = 0.2

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func proxyCPU(r bench.Run) string {
	if !r.HasProxy {
		return "-"
	}
	return bench.FormatDuration(r.ProxyCPUPerRequest())
}

type jsonRun struct {
	Case               string             `json:"case"`
	Round              int                `json:"round"`
	Connections        int                `json:"connections"`
	Requests           int64              `json:"requests"`
	RequestsPerSecond  float64            `json:"requests_per_second"`
	P50Seconds         float64            `json:"p50_seconds"`
	P99Seconds         float64            `json:"p99_seconds"`
	ProxyCPUSeconds    float64            `json:"proxy_cpu_seconds"`
	ProxyCPUByProcess  map[string]float64 `json:"proxy_cpu_seconds_by_process,omitempty"`
	UpstreamCPUSeconds float64            `json:"upstream_cpu_seconds"`
	SocketErrors       int64              `json:"socket_errors"`
	Non2xx3xx          int64              `json:"non_2xx_3xx"`
}

type jsonRow struct {
	Case                            string             `json:"case"`
	Label                           string             `json:"label"`
	Rounds                          int                `json:"rounds"`
	RequestsPerSecond               float64            `json:"requests_per_second"`
	P50Seconds                      float64            `json:"p50_seconds"`
	P99Seconds                      float64            `json:"p99_seconds"`
	ProxyCPUSecondsPerRequest       float64            `json:"proxy_cpu_seconds_per_request,omitempty"`
	ProxyCPUSecondsPerRequestByProc map[string]float64 `json:"proxy_cpu_seconds_per_request_by_process,omitempty"`
	UpstreamCPUSecondsPerRequest    float64            `json:"upstream_cpu_seconds_per_request"`
	Errors                          int64              `json:"errors"`
}

type jsonTransferBatch struct {
	Path              string             `json:"path"`
	Direction         string             `json:"direction"`
	Round             int                `json:"round"`
	Bytes             []int64            `json:"bytes"`
	Seconds           []float64          `json:"seconds"`
	ProxyCPUSeconds   float64            `json:"proxy_cpu_seconds"`
	ProxyCPUByProcess map[string]float64 `json:"proxy_cpu_seconds_by_process,omitempty"`
}

type jsonTransferRow struct {
	Path                  string  `json:"path"`
	Direction             string  `json:"direction"`
	Transfers             int     `json:"transfers"`
	Bytes                 int64   `json:"bytes"`
	MBPerSecond           float64 `json:"mb_per_second"`
	SlowestMBPerSecond    float64 `json:"slowest_mb_per_second"`
	ProxyCPUSecondsPerMiB float64 `json:"proxy_cpu_seconds_per_mib,omitempty"`
}

func seconds(m map[string]time.Duration) map[string]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v.Seconds()
	}
	return out
}

func jsonRuns(runs []bench.Run, conns int) []jsonRun {
	var out []jsonRun
	for _, r := range runs {
		out = append(out, jsonRun{
			Case: r.Case, Round: r.Round, Connections: conns, Requests: r.Wrk.Requests, RequestsPerSecond: r.Wrk.RequestsPerS,
			P50Seconds: r.Wrk.P50().Seconds(), P99Seconds: r.Wrk.P99().Seconds(),
			ProxyCPUSeconds: r.ProxyCPU.Seconds(), ProxyCPUByProcess: seconds(r.Parts), UpstreamCPUSeconds: r.UpstreamCPU.Seconds(),
			SocketErrors: r.Wrk.SocketErrors, Non2xx3xx: r.Wrk.Non2xx3xx,
		})
	}
	return out
}

func jsonRows(rows []bench.Row) []jsonRow {
	var out []jsonRow
	for _, r := range rows {
		out = append(out, jsonRow{
			Case: r.Case, Label: r.Label, Rounds: r.Rounds, RequestsPerSecond: r.RPS,
			P50Seconds: r.P50.Seconds(), P99Seconds: r.P99.Seconds(),
			ProxyCPUSecondsPerRequest: r.ProxyCPUPerRequest.Seconds(), ProxyCPUSecondsPerRequestByProc: seconds(r.PartsPerRequest),
			UpstreamCPUSecondsPerRequest: r.UpstreamCPUPerRequest.Seconds(), Errors: r.Errors,
		})
	}
	return out
}

// writeJSON records every run and the medians, for tracking numbers across commits.
func writeJSON(path string, o options, res results, rows reportRows) error {
	doc := struct {
		Time            time.Time           `json:"time"`
		Rounds          int                 `json:"rounds"`
		Duration        string              `json:"duration"`
		Connections     int                 `json:"connections"`
		Threads         int                 `json:"threads"`
		Runs            []jsonRun           `json:"runs"`
		Medians         []jsonRow           `json:"medians"`
		LatencyRuns     []jsonRun           `json:"latency_runs,omitempty"`
		LatencyMedians  []jsonRow           `json:"latency_medians,omitempty"`
		Transfers       []jsonTransferBatch `json:"transfers,omitempty"`
		TransferMedians []jsonTransferRow   `json:"transfer_medians,omitempty"`
	}{
		Time: time.Now().UTC(), Rounds: o.rounds, Duration: o.duration.String(), Connections: o.connections, Threads: o.threads,
		Runs: jsonRuns(res.runs, o.connections), Medians: jsonRows(rows.load),
		LatencyRuns: jsonRuns(res.latency, 1), LatencyMedians: jsonRows(rows.latency),
	}
	for _, b := range res.transfers {
		jb := jsonTransferBatch{Path: b.Path, Direction: b.Direction, Round: b.Round,
			ProxyCPUSeconds: b.ProxyCPU.Seconds(), ProxyCPUByProcess: seconds(b.Parts)}
		for _, s := range b.Samples {
			jb.Bytes = append(jb.Bytes, s.Bytes)
			jb.Seconds = append(jb.Seconds, s.Elapsed.Seconds())
		}
		doc.Transfers = append(doc.Transfers, jb)
	}
	for _, r := range rows.transfers {
		doc.TransferMedians = append(doc.TransferMedians, jsonTransferRow{
			Path: r.Path, Direction: r.Direction, Transfers: r.Transfers, Bytes: r.Bytes, MBPerSecond: r.MBps,
			SlowestMBPerSecond: r.MinMBps, ProxyCPUSecondsPerMiB: r.ProxyCPUPerMiB.Seconds(),
		})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return "Linux " + strings.TrimSpace(string(b))
}

// firstLine runs a version command (some print to stderr, some exit non-zero) and returns the
// first line of what it printed.
func firstLine(ctx context.Context, argv ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	line = strings.TrimPrefix(line, "nginx version: ")
	line, _, _ = strings.Cut(line, " Copyright") // wrk
	if len(line) > 80 {
		line = line[:80]
	}
	if line == "" {
		return "(unknown)"
	}
	return line
}
