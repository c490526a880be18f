package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

type options struct {
	rounds      int
	duration    time.Duration
	warmup      time.Duration
	connections int
	threads     int
	cases       []string
	added       []string // baselines added to the selected cases
	transfers   int
	repo        string
	edgeBin     string
	caddyBin    string
	jwtKey      string
	serverCPU   int
	clientCPU   int
	noPin       bool
	noInstall   bool
	keep        bool
	jsonOut     string
	results     string
	profileCase string
	profileOut  string
}

// parseOptions reads flags, each defaulting to an EDGEBENCH_* environment variable so `make bench`
// can be tuned without editing the Makefile. --quick shortens every run unless the duration,
// warm-up or rounds are given explicitly.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("edgebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", envBool("EDGEBENCH_QUICK"), "quick mode: 3 rounds of 3 s, 1 s warm-up [EDGEBENCH_QUICK=1]")
	fs.IntVar(&o.rounds, "rounds", envInt("EDGEBENCH_ROUNDS", 3), "interleaved rounds; the table shows medians [EDGEBENCH_ROUNDS]")
	fs.DurationVar(&o.duration, "duration", envDuration("EDGEBENCH_DURATION", 10*time.Second), "wrk duration of each run, whole seconds [EDGEBENCH_DURATION]")
	fs.DurationVar(&o.warmup, "warmup", envDuration("EDGEBENCH_WARMUP", 2*time.Second), "unmeasured wrk run per case before round 1; 0 for none [EDGEBENCH_WARMUP]")
	fs.IntVar(&o.connections, "connections", envInt("EDGEBENCH_CONNECTIONS", bench.GoalConnections), "wrk connections; the issue's goals are at 64 [EDGEBENCH_CONNECTIONS]")
	fs.IntVar(&o.threads, "threads", envInt("EDGEBENCH_THREADS", 1), "wrk threads [EDGEBENCH_THREADS]")
	fs.IntVar(&o.transfers, "transfers", envInt("EDGEBENCH_TRANSFERS", 10), "transfer case: sequential 10 MiB transfers per path, direction and round [EDGEBENCH_TRANSFERS]")
	casesFlag := fs.String("cases", envString("EDGEBENCH_CASES", strings.Join(allCaseIDs(), ",")), "comma-separated cases to run [EDGEBENCH_CASES]")
	fs.StringVar(&o.repo, "repo", envString("EDGEBENCH_REPO", ""), "repository root (default: found from the working directory)")
	fs.StringVar(&o.edgeBin, "edge-bin", envString("EDGEBENCH_EDGE_BIN", ""), "use this edge binary instead of building ./cmd/edge [EDGEBENCH_EDGE_BIN]")
	fs.StringVar(&o.caddyBin, "caddy-bin", envString("EDGEBENCH_CADDY_BIN", ""), "use this caddy binary instead of scripts/caddy.sh's build [EDGEBENCH_CADDY_BIN]")
	fs.StringVar(&o.jwtKey, "jwt-key", envString("EDGEBENCH_JWT_KEY", ""), "RSA private key (PEM) for the job JWT (default: examples/keys/gitlab-jwt.key, else a fresh key)")
	fs.IntVar(&o.serverCPU, "server-cpu", envInt("EDGEBENCH_SERVER_CPU", 0), "CPU the servers (upstream, peers, edge, agent, redis) are pinned to")
	fs.IntVar(&o.clientCPU, "client-cpu", envInt("EDGEBENCH_CLIENT_CPU", 1), "CPU wrk is pinned to")
	fs.BoolVar(&o.noPin, "no-pin", envBool("EDGEBENCH_NO_PIN"), "do not pin processes to CPUs")
	fs.BoolVar(&o.noInstall, "no-install", envBool("EDGEBENCH_NO_INSTALL"), "never apt-get install missing nginx, wrk, redis-server or haproxy")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (configs, logs, binaries)")
	fs.StringVar(&o.jsonOut, "json", envString("EDGEBENCH_JSON", ""), "also write every run, the medians and the goals as JSON to this file")
	fs.StringVar(&o.results, "results", envString("EDGEBENCH_RESULTS", ""), "write edgebench.md, edgebench.json, goals.md and goals.json into this directory; its longpoll.json fills the long-poll goal [EDGEBENCH_RESULTS]")
	fs.StringVar(&o.profileCase, "profile", envString("EDGEBENCH_PROFILE", ""), "after the rounds, profile the proxy of this case (e.g. edge-b) with perf for one more run")
	fs.StringVar(&o.profileOut, "profile-out", envString("EDGEBENCH_PROFILE_OUT", "edgebench-perf.data"), "where perf writes its data for --profile")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: edgebench [flags]\n\nCases: %s\n(tunnel also runs edge-a, tunnel-hop also runs tunnel, edge-post also runs nginx-post and plain-post,\nedge-1k also runs nginx-1k, edge-nethttp also runs edge-a: their baselines)\n\nFlags:\n", strings.Join(allCaseIDs(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] && os.Getenv("EDGEBENCH_DURATION") == "" {
			o.duration = 3 * time.Second
		}
		if !set["warmup"] && os.Getenv("EDGEBENCH_WARMUP") == "" {
			o.warmup = time.Second
		}
	}
	for _, c := range strings.Split(*casesFlag, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !slices.Contains(allCaseIDs(), c) {
			return o, fmt.Errorf("unknown case %q (cases: %s)", c, strings.Join(allCaseIDs(), ", "))
		}
		if !slices.Contains(o.cases, c) {
			o.cases = append(o.cases, c)
		}
	}
	o.cases, o.added = withBaselines(o.cases)
	switch {
	case len(o.cases) == 0:
		return o, fmt.Errorf("no cases selected")
	case o.transfers < 1:
		return o, fmt.Errorf("--transfers must be at least 1")
	case o.rounds < 1:
		return o, fmt.Errorf("--rounds must be at least 1")
	case o.duration < time.Second:
		return o, fmt.Errorf("--duration must be at least 1s (wrk counts whole seconds)")
	case o.connections < 1 || o.threads < 1 || o.threads > o.connections:
		return o, fmt.Errorf("need 1 <= threads <= connections")
	case o.profileCase != "" && !slices.Contains(o.cases, o.profileCase):
		return o, fmt.Errorf("--profile %q is not among the selected cases", o.profileCase)
	case o.profileCase == caseDirect:
		return o, fmt.Errorf("--profile direct: there is no proxy to profile")
	case o.profileCase == caseTransfer:
		return o, fmt.Errorf("--profile transfer: only wrk cases can be profiled")
	}
	return o, nil
}

func envString(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envBool(name string) bool {
	v, err := strconv.ParseBool(os.Getenv(name))
	return err == nil && v
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// envDuration takes "10s" or a bare number of seconds.
func envDuration(name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second
	}
	return def
}
