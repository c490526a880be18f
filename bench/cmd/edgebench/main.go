// Command edgebench benchmarks edge side by side with a direct upstream and nginx on loopback:
// interleaved rounds of wrk against each case, medians, CPU per request. See bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"gitlab.com/edge/edge/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
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
	h := &harness{opts: opts, dir: dir, sup: &supervisor{dir: dir}}
	defer h.sup.stopAll()

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
	if h.tools, err = ensureTools(ctx, h.opts.noInstall); err != nil {
		return err
	}
	h.pin = h.pinningPossible()
	if h.repo, err = findRepo(h.opts.repo); err != nil {
		return err
	}

	toks, jwtPub, err := h.mintTokens()
	if err != nil {
		return err
	}
	cases := buildCases(h.opts.cases, toks)

	if err := h.startUpstream(ctx); err != nil {
		return err
	}
	if needsNginx(cases) {
		if err := h.startNginx(ctx); err != nil {
			return err
		}
	}
	if needsEdge(cases) {
		if err := h.startEdge(ctx, jwtPub); err != nil {
			return err
		}
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
	h.printHeader(ctx)

	if h.opts.warmup > 0 {
		for _, c := range cases {
			if _, err := h.wrk(ctx, c, scripts[c.id], h.opts.warmup); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	runs, err := h.rounds(ctx, cases, scripts)
	if err != nil {
		return err
	}
	rows := h.report(cases, runs)
	if h.opts.jsonOut != "" {
		if err := writeJSON(h.opts.jsonOut, h.opts, runs, rows); err != nil {
			return err
		}
	}
	if h.opts.profileCase != "" {
		if err := h.profile(ctx, cases, scripts); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.Errors > 0 {
			return fmt.Errorf("%s: %d socket errors or non-2xx answers during the runs", r.Case, r.Errors)
		}
	}
	return nil
}

// rounds runs every case once per round, rotating the order each round so that no case always
// runs first or right after the same neighbour.
func (h *harness) rounds(ctx context.Context, cases []benchCase, scripts map[string]string) ([]bench.Run, error) {
	var runs []bench.Run
	for round := 1; round <= h.opts.rounds; round++ {
		for i := range cases {
			c := cases[(i+round-1)%len(cases)]
			r, err := h.measure(ctx, c, scripts[c.id], round)
			if err != nil {
				return nil, err
			}
			logf("round %d/%d %-7s %9.0f req/s  p50 %-8s p99 %-8s proxy cpu/req %s",
				round, h.opts.rounds, c.id, r.Wrk.RequestsPerS, bench.FormatDuration(r.Wrk.P50()), bench.FormatDuration(r.Wrk.P99()), proxyCPU(r))
			runs = append(runs, r)
		}
	}
	return runs, nil
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
