package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"gitlab.com/edge/edge/bench"
)

// wrkCase is one way to the upstream, loaded with wrk.
type wrkCase struct {
	name   string
	url    string
	header []string
}

// measure runs the cases in interleaved rounds.
func measure(ctx context.Context, o options, cases []wrkCase) ([][]bench.WrkResult, error) {
	results := make([][]bench.WrkResult, len(cases))
	for r := range o.rounds {
		for i, c := range cases {
			args := []string{"wrk", "-t1", fmt.Sprintf("-c%d", o.conns), fmt.Sprintf("-d%s", o.duration), "--latency"}
			for _, h := range c.header {
				args = append(args, "-H", h)
			}
			res, err := bench.RunWrk(ctx, append(args, c.url))
			if err != nil {
				return nil, err
			}
			if err := res.Clean(); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %s: %.0f req/s p50 %s\n", r+1, c.name, res.RequestsPerS, res.P50())
			results[i] = append(results[i], res)
		}
	}
	return results, nil
}

// report prints the medians as a Markdown table and the goal's line.
func report(w io.Writer, o options, cases []wrkCase, results [][]bench.WrkResult) {
	rate := func(i int) float64 {
		v := make([]float64, 0, len(results[i]))
		for _, r := range results[i] {
			v = append(v, r.RequestsPerS)
		}
		return bench.Median(v)
	}
	p50 := func(i int) time.Duration {
		v := make([]time.Duration, 0, len(results[i]))
		for _, r := range results[i] {
			v = append(v, r.P50())
		}
		return bench.MedianDuration(v)
	}
	fmt.Fprintf(w, "| case | req/s | p50 |\n|---|---|---|\n")
	for i, c := range cases {
		fmt.Fprintf(w, "| %s | %.0f | %s |\n", c.name, rate(i), p50(i))
	}
	fmt.Fprintf(w, "\nworkspace route vs agent proxy path: %.2fx requests/s (goal >= 0.9x), added p50 %s (%d connections, %d rounds of %s, medians)\n",
		rate(1)/rate(0), p50(1)-p50(0), o.conns, o.rounds, o.duration)
}
