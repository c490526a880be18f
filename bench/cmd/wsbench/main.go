// Command wsbench measures what a workspace's login costs on the request path: requests per
// second and p50 latency through an authenticated workspace route (session cookie, cached
// authorization) against the same upstream through the API for GitLab's agent proxy path (same
// edge, same agent, same tunnel, no login), side by side in interleaved wrk rounds.
package main

import (
	"errors"
	"flag"
	"io"
	"time"

	"gitlab.com/edge/edge/bench"
)

// options are the command's flags.
type options struct {
	duration time.Duration // -d: each wrk run
	rounds   int
	conns    int // -c: wrk connections
}

func main() {
	bench.Main("wsbench", parseOptions, run)
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("wsbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "d", 10*time.Second, "duration of each wrk run")
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds of each case")
	fs.IntVar(&o.conns, "c", 64, "wrk connections")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, errors.New("no arguments")
	}
	return o, nil
}
