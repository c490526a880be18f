package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// options are the command's flags.
type options struct {
	duration  time.Duration // -duration: the chaos part (load and faults)
	warmup    time.Duration // -warmup: load without faults before it, ending in the baseline
	results   string
	seed      int64
	quick     bool
	runners   int           // -runners: runner loops
	workspace int           // -workspace: workspace-like request loops
	jobRate   float64       // -jobs: jobs queued per second, all cells together
	faultMin  time.Duration // -fault-min, -fault-max: the gap before each fault is drawn from [min, max]
	faultMax  time.Duration
	grace     time.Duration // -grace: after a fault window, still counted inside it
	settleMax time.Duration // -settle: after the load, how long to wait for the edges to settle
	longPoll  time.Duration // -long-poll: how long a cell holds a job request without a job
	down      time.Duration // -down: a killed process stays down for a random time up to this
	settleMin time.Duration // -settle-min: after the load, idle at least this long before the edges' final reading
	kinds     []string      // -faults: the kinds of fault the script draws from
	edgeBin   string
	keep      bool
	move      bool // -move: move an organization to another cell and back during the chaos
}

// Defaults of a full run, and what -quick changes unless the flag is given.
const (
	defaultDuration = 10 * time.Minute
	quickDuration   = 90 * time.Second
)

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("chaossoak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", defaultDuration, "how long the load runs under faults (-quick: 90s)")
	fs.DurationVar(&o.warmup, "warmup", 30*time.Second, "load without faults before the chaos, then the baseline (-quick: 10s)")
	fs.StringVar(&o.results, "results", "", "write chaos.md and chaos.json into this directory")
	fs.Int64Var(&o.seed, "seed", 0, "seed of the fault script and the clients' choices (0: from the clock; printed)")
	fs.BoolVar(&o.quick, "quick", false, "a 90 s run for development (-duration 90s -warmup 10s, faults every 6-14 s)")
	fs.IntVar(&o.runners, "runners", 20, "runner loops (POST jobs/request, PATCH trace, PUT jobs/:id)")
	fs.IntVar(&o.workspace, "workspace", 4, "workspace-like request loops through the API for GitLab to the agents")
	fs.Float64Var(&o.jobRate, "jobs", 5, "jobs queued per second, over the three cells")
	fs.DurationVar(&o.faultMin, "fault-min", 15*time.Second, "shortest gap between two faults (-quick: 6s)")
	fs.DurationVar(&o.faultMax, "fault-max", 40*time.Second, "longest gap between two faults (-quick: 14s)")
	fs.DurationVar(&o.grace, "grace", 5*time.Second, "after a fault is over, edge-made errors still count as inside it for this long")
	fs.DurationVar(&o.settleMax, "settle", 150*time.Second, "after the load, wait up to this long for the edges never killed to settle (-quick: 100s)")
	fs.DurationVar(&o.longPoll, "long-poll", 10*time.Second, "how long a cell holds a job request when it has no job")
	fs.DurationVar(&o.down, "down", 5*time.Second, "a killed process stays down for a random time between 0 and this before it is started again")
	fs.DurationVar(&o.settleMin, "settle-min", 100*time.Second, "idle time before the baseline, and at least before the final reading, of the edges (edge closes idle connections, two goroutines each, after 90 s; -quick: 20s)")
	faults := fs.String("faults", strings.Join(faultKinds, ","), "the kinds of fault to run, comma-separated")
	fs.StringVar(&o.edgeBin, "edge-bin", "", "use this edge binary instead of building ./cmd/edge")
	fs.BoolVar(&o.move, "move", true, "move organization 2 from cell 2 to cell 3 and back (freeze, then switch, each way) during the chaos")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (configs, ledgers, logs); kept anyway when a check fails")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: chaossoak [flags]\n\nRuns three edges, three cells, Redis and two agents under runner and workspace load while\nkilling and restarting them, and checks that every job was handed out once and finished, that\nedge made 5xx only during faults, and that the edges that were never killed settle back.")
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
		for name, apply := range map[string]func(){
			"duration":   func() { o.duration = quickDuration },
			"warmup":     func() { o.warmup = 10 * time.Second },
			"fault-min":  func() { o.faultMin = 6 * time.Second },
			"fault-max":  func() { o.faultMax = 14 * time.Second },
			"settle":     func() { o.settleMax = 100 * time.Second },
			"settle-min": func() { o.settleMin = 20 * time.Second },
		} {
			if !set[name] {
				apply()
			}
		}
	}
	for _, k := range strings.Split(*faults, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !slices.Contains(faultKinds, k) {
			return options{}, fmt.Errorf("-faults: unknown kind %q (kinds: %s)", k, strings.Join(faultKinds, ", "))
		}
		o.kinds = append(o.kinds, k)
	}
	if len(o.kinds) == 0 {
		return options{}, fmt.Errorf("-faults names no kind")
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1_000_000_000
	}
	switch {
	case o.duration < 10*time.Second:
		return options{}, fmt.Errorf("-duration must be at least 10s")
	case o.warmup < 0 || o.grace < 0 || o.settleMax < 0 || o.settleMin < 0 || o.down < 0:
		return options{}, fmt.Errorf("-warmup, -grace, -settle, -settle-min and -down must not be negative")
	case o.settleMin > o.settleMax:
		return options{}, fmt.Errorf("-settle-min must not be longer than -settle")
	case o.runners < 3:
		return options{}, fmt.Errorf("-runners must be at least 3 (one per cell)")
	case o.workspace < 0:
		return options{}, fmt.Errorf("-workspace must not be negative")
	case o.jobRate <= 0:
		return options{}, fmt.Errorf("-jobs must be positive")
	case o.faultMin <= 0 || o.faultMax < o.faultMin:
		return options{}, fmt.Errorf("-fault-min must be positive and at most -fault-max")
	case o.longPoll < time.Second:
		return options{}, fmt.Errorf("-long-poll must be at least 1s")
	}
	return o, nil
}
