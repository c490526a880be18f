package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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
	fmt.Printf("tools: %s\n", strings.Join(versions, "; "))
	if h.pin {
		fmt.Printf("pinning: upstream, nginx and edge on CPU %d; wrk on CPU %d\n", h.opts.serverCPU, h.opts.clientCPU)
	} else {
		fmt.Println("pinning: none")
	}
	fmt.Printf("load: wrk %d connections, %d thread(s), %s per run, %s warm-up per case, %d interleaved rounds\n\n",
		h.opts.connections, h.opts.threads, h.opts.duration, h.opts.warmup, h.opts.rounds)
}

// report prints the medians table and returns its rows.
func (h *harness) report(cases []benchCase, runs []bench.Run) []bench.Row {
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.id
	}
	rows := bench.Summarize(ids, caseLabels(cases), runs)
	fmt.Printf("medians of %d rounds:\n", h.opts.rounds)
	_ = bench.WriteTable(os.Stdout, bench.Cells(rows))
	fmt.Println()
	fmt.Println("cpu/req: utime+stime from /proc/<pid>/stat (nginx: master and worker) over the run, divided by its requests.")
	fmt.Println("req/s: higher is better; p99 and cpu/req: lower is better. spread: (max-min)/median of req/s over the rounds.")
	fmt.Println("errors: socket errors + non-2xx answers.")
	for _, r := range rows {
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
	Case               string  `json:"case"`
	Round              int     `json:"round"`
	Requests           int64   `json:"requests"`
	RequestsPerSecond  float64 `json:"requests_per_second"`
	P50Seconds         float64 `json:"p50_seconds"`
	P99Seconds         float64 `json:"p99_seconds"`
	ProxyCPUSeconds    float64 `json:"proxy_cpu_seconds"`
	UpstreamCPUSeconds float64 `json:"upstream_cpu_seconds"`
	SocketErrors       int64   `json:"socket_errors"`
	Non2xx3xx          int64   `json:"non_2xx_3xx"`
}

type jsonRow struct {
	Case                         string  `json:"case"`
	Label                        string  `json:"label"`
	Rounds                       int     `json:"rounds"`
	RequestsPerSecond            float64 `json:"requests_per_second"`
	P50Seconds                   float64 `json:"p50_seconds"`
	P99Seconds                   float64 `json:"p99_seconds"`
	ProxyCPUSecondsPerRequest    float64 `json:"proxy_cpu_seconds_per_request,omitempty"`
	UpstreamCPUSecondsPerRequest float64 `json:"upstream_cpu_seconds_per_request"`
	Errors                       int64   `json:"errors"`
}

// writeJSON records every run and the medians, for tracking numbers across commits.
func writeJSON(path string, o options, runs []bench.Run, rows []bench.Row) error {
	doc := struct {
		Time        time.Time `json:"time"`
		Rounds      int       `json:"rounds"`
		Duration    string    `json:"duration"`
		Connections int       `json:"connections"`
		Threads     int       `json:"threads"`
		Runs        []jsonRun `json:"runs"`
		Medians     []jsonRow `json:"medians"`
	}{Time: time.Now().UTC(), Rounds: o.rounds, Duration: o.duration.String(), Connections: o.connections, Threads: o.threads}
	for _, r := range runs {
		doc.Runs = append(doc.Runs, jsonRun{
			Case: r.Case, Round: r.Round, Requests: r.Wrk.Requests, RequestsPerSecond: r.Wrk.RequestsPerS,
			P50Seconds: r.Wrk.P50().Seconds(), P99Seconds: r.Wrk.P99().Seconds(),
			ProxyCPUSeconds: r.ProxyCPU.Seconds(), UpstreamCPUSeconds: r.UpstreamCPU.Seconds(),
			SocketErrors: r.Wrk.SocketErrors, Non2xx3xx: r.Wrk.Non2xx3xx,
		})
	}
	for _, r := range rows {
		doc.Medians = append(doc.Medians, jsonRow{
			Case: r.Case, Label: r.Label, Rounds: r.Rounds, RequestsPerSecond: r.RPS,
			P50Seconds: r.P50.Seconds(), P99Seconds: r.P99.Seconds(),
			ProxyCPUSecondsPerRequest: r.ProxyCPUPerRequest.Seconds(), UpstreamCPUSecondsPerRequest: r.UpstreamCPUPerRequest.Seconds(),
			Errors: r.Errors,
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
