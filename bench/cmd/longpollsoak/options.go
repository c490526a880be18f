package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// options are the command's flags.
type options struct {
	polls   int           // -n: long polls to hold at once
	rps     float64       // -rps: other runner traffic, requests per second
	dur     time.Duration // -d: the soak; the other traffic runs this long
	hold    time.Duration // -hold: how long the cell holds the polls, from the start; 0 means dur
	settle  time.Duration // -settle: after the last answer, before goroutines_after
	edgeBin string
	results string
	keep    bool
	quick   bool
}

// quick is -quick: a fast check of the whole path, not the goal's size.
const (
	quickPolls = 1000
	quickDur   = 15 * time.Second
)

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("longpollsoak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.polls, "n", 10000, "concurrent long polls (POST /api/v4/jobs/request), each on its own connection")
	fs.Float64Var(&o.rps, "rps", 2000, "other runner traffic during the soak, requests per second")
	fs.DurationVar(&o.dur, "d", 60*time.Second, "soak duration")
	fs.DurationVar(&o.hold, "hold", 0, "how long the cell holds each long poll, counted from the start of the soak (0: -d)")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "wait this long after the last answer before counting edge's goroutines again (edge keeps idle upstream connections, two goroutines each, for 90 s)")
	fs.StringVar(&o.edgeBin, "edge-bin", "", "use this edge binary instead of building ./cmd/edge")
	fs.StringVar(&o.results, "results", "", "write longpoll.json and longpoll.md into this directory")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (configs, logs)")
	fs.BoolVar(&o.quick, "quick", false, fmt.Sprintf("fast check: -n %d -d %s unless given", quickPolls, quickDur))
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: longpollsoak [flags]\n\nHolds -n long polls through edge at a cell for the soak while other runner traffic runs, and reports edge's memory, goroutines and CPU.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		if !set["n"] {
			o.polls = quickPolls
		}
		if !set["d"] {
			o.dur = quickDur
		}
	}
	if o.hold == 0 {
		o.hold = o.dur
	}
	switch {
	case o.polls < 1:
		return options{}, fmt.Errorf("-n must be at least 1")
	case o.rps < 0:
		return options{}, fmt.Errorf("-rps must not be negative")
	case o.dur < time.Second:
		return options{}, fmt.Errorf("-d must be at least 1s")
	case o.hold < 0 || o.hold > o.dur:
		return options{}, fmt.Errorf("-hold must be between 0 and -d")
	case o.settle < 0:
		return options{}, fmt.Errorf("-settle must not be negative")
	}
	return o, nil
}
