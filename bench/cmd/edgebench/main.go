// Command edgebench benchmarks edge side by side with a direct upstream and nginx on loopback:
// interleaved rounds of wrk against each case, medians, CPU per request. See bench/README.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) > 1 && os.Args[1] == transferClientCmd {
		return runTransferClient(os.Args[2:], os.Stdout, os.Stderr)
	}
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgebench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "edgebench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgebench:", err)
		return 1
	}
	if opts.keep {
		logf("keeping %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	// What is printed is kept too, for the results directory's edgebench.md.
	var printed bytes.Buffer
	h := &harness{opts: opts, dir: dir, sup: &bench.Supervisor{Dir: dir, Name: "edgebench"}, out: io.MultiWriter(os.Stdout, &printed), printed: &printed}
	defer h.sup.StopAll()

	err = h.benchmark(ctx)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "edgebench: interrupted, stopping everything")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "edgebench:", err)
		return 1
	}
	return 0
}

func (h *harness) benchmark(ctx context.Context) error {
	var err error
	if h.tools, err = ensureTools(ctx, h.opts.noInstall, h.opts.cases); err != nil {
		return err
	}
	h.pin = h.pinningPossible()
	if h.repo, err = findRepo(h.opts.repo); err != nil {
		return err
	}
	if err := h.findCaddy(ctx); err != nil {
		return err
	}
	if len(h.opts.added) > 0 {
		logf("also running %s: the baseline the selected cases are compared with", strings.Join(h.opts.added, ", "))
	}

	var jwtPub string
	if h.tokens, jwtPub, err = h.mintTokens(); err != nil {
		return err
	}
	if needsEdge(buildCases(h.opts.cases, h.tokens)) || needsAgent(h.opts.cases) {
		if err := h.buildEdge(ctx); err != nil {
			return err
		}
	}
	if needsAgent(h.opts.cases) {
		if err := h.prepareAgents(ctx); err != nil { // sets h.tokens.api
			return err
		}
	}
	cases := buildCases(h.opts.cases, h.tokens)

	if err := h.startServers(ctx, cases, jwtPub); err != nil {
		return err
	}
	for _, c := range cases {
		if err := h.verify(ctx, c); err != nil {
			return fmt.Errorf("routing check: %w", err)
		}
	}
	scripts, err := h.writeScripts(cases)
	if err != nil {
		return err
	}
	if slices.Contains(h.opts.cases, caseTransfer) {
		if err := h.writeTransferHeaders(); err != nil {
			return err
		}
	}
	h.printHeader(ctx)

	if h.opts.warmup > 0 {
		for _, c := range cases {
			if _, err := h.wrk(ctx, c, scripts[c.id], h.opts.warmup); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	res, err := h.rounds(ctx, h.steps(cases, scripts))
	if err != nil {
		return err
	}
	rows := h.report(cases, res)
	var profileErr error
	if h.opts.profileCase != "" {
		profileErr = h.profile(ctx, cases, scripts)
	}
	if err := h.record(res, rows); err != nil {
		return err
	}
	if profileErr != nil {
		return profileErr
	}
	for _, r := range slices.Concat(rows.load, rows.latency) {
		if r.Errors > 0 {
			return fmt.Errorf("%s: %d socket errors or non-2xx answers during the runs", r.Case, r.Errors)
		}
	}
	return nil
}

// startServers starts what the cases need, upstream first: the peers (nginx, HAProxy, Caddy, the
// plain httputil proxy, the Go floor), the edge, for the tunnel cases Redis and the second edge
// (for the hop), the edge on net/http's server (edge-nethttp), then the agent.
func (h *harness) startServers(ctx context.Context, cases []benchCase, jwtPub string) error {
	if err := h.startUpstream(ctx); err != nil {
		return err
	}
	for _, peer := range []struct {
		target string
		start  func(context.Context) error
	}{
		{targetNginx, h.startNginx}, {targetHAProxy, h.startHAProxy}, {targetCaddy, h.startCaddy}, {targetPlain, h.startPlain}, {targetFloor, h.startFloor},
	} {
		if !needsPeer(h.opts.cases, cases, peer.target) {
			continue
		}
		if err := peer.start(ctx); err != nil {
			return err
		}
	}
	if needsSecondEdge(h.opts.cases) {
		if err := h.startRedis(ctx); err != nil {
			return err
		}
	}
	if h.edgeBin != "" {
		if err := h.startEdge(ctx, jwtPub); err != nil {
			return err
		}
	}
	if needsSecondEdge(h.opts.cases) {
		if err := h.startEdge2(ctx, jwtPub); err != nil {
			return err
		}
	}
	if needsTarget(cases, targetEdgeNetHTTP) {
		if err := h.startEdgeNetHTTP(ctx, jwtPub); err != nil {
			return err
		}
	}
	if needsAgent(h.opts.cases) {
		if err := h.startAgent(ctx); err != nil {
			return err
		}
	}
	return nil
}

// results are every measurement of the rounds.
type results struct {
	runs      []bench.Run           // wrk at the configured connections
	latency   []bench.Run           // wrk at one connection
	transfers []bench.TransferBatch // the transfer case
}

// step is one measurement of a round; it records its result and returns a line for the log.
type step func(ctx context.Context, round int, res *results) (string, error)

// steps are a round's measurements: each wrk case, then (with a tunnel case) each latency case
// at one connection, then (with the transfer case) each transfer path, both directions.
func (h *harness) steps(cases []benchCase, scripts map[string]string) []step {
	var out []step
	for _, c := range cases {
		out = append(out, func(ctx context.Context, round int, res *results) (string, error) {
			r, err := h.measure(ctx, c, scripts[c.id], round, h.opts.duration, h.opts.connections)
			if err != nil {
				return "", err
			}
			res.runs = append(res.runs, r)
			return fmt.Sprintf("%-12s %9.0f req/s  p50 %-8s p99 %-8s proxy cpu/req %s",
				c.id, r.Wrk.RequestsPerS, bench.FormatDuration(r.Wrk.P50()), bench.FormatDuration(r.Wrk.P99()), proxyCPU(r)), nil
		})
	}
	for _, c := range latencyCases(cases) {
		out = append(out, func(ctx context.Context, round int, res *results) (string, error) {
			r, err := h.measure(ctx, c, scripts[c.id], round, h.latencyDuration(), 1)
			if err != nil {
				return "", err
			}
			res.latency = append(res.latency, r)
			return fmt.Sprintf("%-12s 1 connection: %6.0f req/s  p50 %-8s p99 %s",
				c.id, r.Wrk.RequestsPerS, bench.FormatDuration(r.Wrk.P50()), bench.FormatDuration(r.Wrk.P99())), nil
		})
	}
	if slices.Contains(h.opts.cases, caseTransfer) {
		for _, path := range transferPaths() {
			out = append(out, func(ctx context.Context, round int, res *results) (string, error) {
				var parts []string
				for _, dir := range []string{bench.Download, bench.Upload} {
					b, err := h.transferBatch(ctx, path, dir, round)
					if err != nil {
						return "", err
					}
					res.transfers = append(res.transfers, b)
					rows := bench.SummarizeTransfers([]string{path}, nil, []bench.TransferBatch{b})
					parts = append(parts, fmt.Sprintf("%s %.0f MB/s", dir, rows[0].MBps))
				}
				return fmt.Sprintf("%-10s %s", "transfer "+path, strings.Join(parts, ", ")), nil
			})
		}
	}
	return out
}

// latencyDuration is how long each one-connection run lasts: half a load run is plenty of
// sequential requests for a p99.
func (h *harness) latencyDuration() time.Duration {
	return max(time.Second, (h.opts.duration/2 + time.Second/2).Truncate(time.Second))
}

// rounds runs every step once per round, rotating the order each round so that no step always
// runs first or right after the same neighbour.
func (h *harness) rounds(ctx context.Context, steps []step) (results, error) {
	var res results
	for round := 1; round <= h.opts.rounds; round++ {
		for i := range steps {
			line, err := steps[(i+round-1)%len(steps)](ctx, round, &res)
			if err != nil {
				return res, err
			}
			logf("round %d/%d %s", round, h.opts.rounds, line)
		}
	}
	return res, nil
}

// pinningPossible: pin when taskset is there and both CPUs are ones this process may use.
func (h *harness) pinningPossible() bool {
	n := runtime.NumCPU()
	switch {
	case h.opts.noPin:
		return false
	case h.tools.taskset == "":
		logf("taskset not found: not pinning (numbers will be noisier)")
		return false
	case n < 2:
		logf("only %d CPU: not pinning; servers and wrk share it, so numbers are lower and noisier", n)
		return false
	case h.opts.serverCPU == h.opts.clientCPU || h.opts.serverCPU >= n || h.opts.clientCPU >= n || h.opts.serverCPU < 0 || h.opts.clientCPU < 0:
		logf("CPUs %d (servers) and %d (wrk) are not two distinct CPUs of %d: not pinning", h.opts.serverCPU, h.opts.clientCPU, n)
		return false
	}
	return true
}

// findRepo walks up from dir (or the working directory) to the go.mod of the edge module.
func findRepo(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && isEdgeModule(b) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of gitlab.com/edge/edge at or above %s (use --repo)", dir)
		}
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "edgebench: "+format+"\n", args...)
}
