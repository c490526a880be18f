package main

import (
	"bufio"
	"context"
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
	fmt.Fprintf(h.out, "edgebench %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(h.out, "machine: %s, %d CPUs, %s, %s, load average %s\n", cpuModel(), runtime.NumCPU(), kernel(), runtime.Version(), loadAvg())
	versions := []string{"nginx " + firstLine(ctx, h.tools.nginx, "-v"), "wrk " + firstLine(ctx, h.tools.wrk, "--version")}
	if h.edgeBin != "" {
		versions = append(versions, "edge "+firstLine(ctx, h.edgeBin, "version"))
	}
	if h.haproxy != nil {
		versions = append(versions, "haproxy "+firstLine(ctx, h.tools.haproxy, "-v"))
	}
	if h.caddy != nil {
		versions = append(versions, "caddy "+firstLine(ctx, h.tools.caddy, "version"))
	}
	if h.plain != nil {
		versions = append(versions, "plain httputil proxy ("+h.plainInfo+")")
	}
	if h.redis != nil {
		versions = append(versions, "redis "+firstLine(ctx, h.tools.redis, "--version"))
	}
	fmt.Fprintf(h.out, "tools: %s\n", strings.Join(versions, "; "))
	if h.edgeNetHTTP != nil {
		fmt.Fprintf(h.out, "edge-nethttp: edge's config and binary with listen.http1 %q (edge itself: its own engine, the default)\n", bench.HTTP1NetHTTP)
	}
	clients := "wrk"
	if slices.Contains(h.opts.cases, caseTransfer) {
		clients = "wrk and the transfer client"
	}
	if h.pin {
		fmt.Fprintf(h.out, "pinning: %s on CPU %d; %s on CPU %d\n", strings.Join(h.sup.Names(), ", "), h.opts.serverCPU, clients, h.opts.clientCPU)
	} else {
		fmt.Fprintln(h.out, "pinning: none")
	}
	fmt.Fprintf(h.out, "load: wrk %d connections, %d thread(s), %s per run, %s warm-up per case, %d interleaved rounds\n",
		h.opts.connections, h.opts.threads, h.opts.duration, h.opts.warmup, h.opts.rounds)
	if h.agent != nil {
		fmt.Fprintf(h.out, "tunnel: agent %s connected to edge; tunnel cases also run at 1 connection for %s per round\n",
			agentID, h.latencyDuration())
	}
	if slices.Contains(h.opts.cases, caseTransfer) {
		fmt.Fprintf(h.out, "transfer: %d sequential %s downloads and uploads per path and round (after 1 unmeasured), one connection\n",
			h.opts.transfers, bench.FormatBytes(transferSize))
	}
	fmt.Fprintln(h.out)
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
		fmt.Fprintf(h.out, "medians of %d rounds:\n", h.opts.rounds)
		_ = bench.WriteTable(h.out, bench.Cells(rows.load))
		fmt.Fprintln(h.out)
		fmt.Fprintln(h.out, "cpu/req: utime+stime from /proc/<pid>/stat (nginx: master and worker) over the run, divided by its requests.")
		fmt.Fprintln(h.out, "edge runs with its access log on (its default; nginx, HAProxy, Caddy and plain log nothing per request).")
		fmt.Fprintln(h.out, "req/s: higher is better; p99 and cpu/req: lower is better. spread: (max-min)/median of req/s over the rounds.")
		fmt.Fprintln(h.out, "errors: socket errors + non-2xx answers.")
	}
	tunnel := slices.ContainsFunc(cases, func(c benchCase) bool { return c.viaAgent })
	if tunnel {
		fmt.Fprintln(h.out, "tunnel rows: proxy cpu/req is the whole path (edges, agent and, for the hop, Redis); split below.")
		fmt.Fprintf(h.out, "\ntunnel cases at %d connections (medians of %d rounds):\n", h.opts.connections, h.opts.rounds)
		_ = bench.WriteTable(h.out, bench.TunnelCells(rows.load))
		fmt.Fprintln(h.out, "edge: the edge the agent is connected to; edge2: the hop's entry edge; added p50: over the case in 'over'.")
	}
	if len(res.latency) > 0 {
		var lids []string
		for _, c := range latencyCases(cases) {
			lids = append(lids, c.id)
		}
		rows.latency = bench.Summarize(lids, labels, res.latency)
		fmt.Fprintf(h.out, "\nlatency at 1 connection (sequential requests, wrk -c1, %s per round; medians of %d rounds):\n", h.latencyDuration(), h.opts.rounds)
		_ = bench.WriteTable(h.out, bench.LatencyCells(rows.latency))
	}
	if len(res.transfers) > 0 {
		rows.transfers = bench.SummarizeTransfers(transferPaths(), transferLabels(), res.transfers)
		fmt.Fprintf(h.out, "\ntransfers (median over every transfer of every round; MB = 10^6 bytes):\n")
		_ = bench.WriteTable(h.out, bench.TransferCells(rows.transfers))
		fmt.Fprintln(h.out, "path cpu/MiB: CPU of the processes on the path (nginx; the edges, agent and Redis) per MiB moved; spread: (max-min)/median of the rounds' medians.")
	}
	findings := slices.Concat(bench.PeerFindings(rows.load), bench.PostFindings(rows.load),
		bench.TunnelFindings(rows.load, rows.latency, rows.transfers))
	if len(findings) > 0 {
		fmt.Fprintln(h.out, "\nfindings:")
		for _, f := range findings {
			fmt.Fprintln(h.out, "- "+f)
		}
	}
	for _, r := range rows.load {
		if r.RPSSpread > noisySpread {
			fmt.Fprintf(h.out, "warning: req/s of %s varied by %.0f%% over the rounds (load average now %s): something else is\n"+
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
	line = strings.TrimPrefix(line, "HAProxy version ")
	line, _, _ = strings.Cut(line, " - https://") // haproxy
	line, _, _ = strings.Cut(line, " Copyright")  // wrk
	if len(line) > 80 {
		line = line[:80]
	}
	if line == "" {
		return "(unknown)"
	}
	return line
}
