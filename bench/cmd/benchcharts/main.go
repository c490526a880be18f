// Command benchcharts draws a make bench results directory's peer comparison as SVG charts
// beside its JSON: req-per-second.svg, cpu-per-request.svg and latency.svg from edgebench.json,
// held-polls.svg from longpoll.json. A missing input skips its charts; unreadable JSON exits 1.
//
//	go run ./bench/cmd/benchcharts -results bench/results/issue26-direct
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gitlab.com/edge/edge/bench"
)

func main() {
	dir := flag.String("results", "", "results directory holding edgebench.json and longpoll.json; the charts are written there")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: benchcharts -results DIR")
		os.Exit(2)
	}
	if err := run(*dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchcharts:", err)
		os.Exit(1)
	}
}

type chart struct {
	file string
	draw func() (string, error)
}

func run(dir string, out io.Writer) error {
	// A mistyped directory is an error, not two lines of skipped charts.
	if _, err := os.Stat(dir); err != nil {
		return err
	}
	var charts []chart
	b, err := readInput(dir, "edgebench.json", out, "req-per-second.svg, cpu-per-request.svg, latency.svg")
	if err != nil {
		return err
	}
	if b != nil {
		runs, err := bench.ParseChartRuns(b)
		if err != nil {
			return err
		}
		charts = append(charts,
			chart{"req-per-second.svg", func() (string, error) { return bench.ReqPerSecondChart(runs) }},
			chart{"cpu-per-request.svg", func() (string, error) { return bench.CPUPerRequestChart(runs) }},
			chart{"latency.svg", func() (string, error) { return bench.LatencyChart(runs) }})
	}
	b, err = readInput(dir, bench.LongPollFile, out, "held-polls.svg")
	if err != nil {
		return err
	}
	if b != nil {
		lp, err := bench.ParseChartLongPoll(b)
		if err != nil {
			return err
		}
		charts = append(charts, chart{"held-polls.svg", func() (string, error) { return bench.HeldPollsChart(lp) }})
	}
	for _, c := range charts {
		text, err := c.draw()
		if errors.Is(err, bench.ErrNoChartData) {
			fmt.Fprintf(out, "benchcharts: %s skipped: %v\n", c.file, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.file, err)
		}
		path := filepath.Join(dir, c.file)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "benchcharts: wrote %s\n", path)
	}
	return nil
}

// readInput is name's bytes in dir, or nil with a line saying which charts are skipped when it
// is not there (a make bench that stopped early, or a directory of edgebench alone).
func readInput(dir, name string, out io.Writer, charts string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "benchcharts: no %s in %s: %s skipped\n", name, dir, charts)
		return nil, nil
	}
	return b, err
}
