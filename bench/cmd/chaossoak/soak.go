package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

// soak is one run: the cluster, the clients' state and what they saw.
type soak struct {
	o      options
	c      *cluster
	out    io.Writer
	rec    *recorder
	client *http.Client // the runners' and workspace loops' (keep-alive, no overall timeout)
	faults *eventLog[fault]
	moves  eventLog[moveStep]
	busy   atomic.Int32 // runners working a job
	phase  uint64       // loads run so far (warm-up, chaos): varies the loops' random draws
	t0     time.Time

	jobsMu       sync.Mutex
	receipts     map[uint64][]*receipt
	queued       map[uint64]time.Time
	queueRefused int
	nextJob      [3]uint64
	resets       []resetPoll // job requests reset while parked (runner-reset-parked)
}

// edgeSample is one reading of an edge's /metrics.
type edgeSample struct {
	Goroutines float64
	RSS        float64 // bytes
	Heap       float64 // bytes
}

func (s *soak) sampleEdge(ctx context.Context, i int) (edgeSample, error) {
	m, err := scrape(ctx, s.c.http, "http://"+s.c.edges[i].ops+"/metrics")
	if err != nil {
		return edgeSample{}, err
	}
	for _, name := range []string{metricGoroutines, metricRSS, metricHeap} {
		if _, ok := m[name]; !ok {
			return edgeSample{}, fmt.Errorf("edge%d: no %s in /metrics", i+1, name)
		}
	}
	return edgeSample{Goroutines: m[metricGoroutines], RSS: m[metricRSS], Heap: m[metricHeap]}, nil
}

func run(ctx context.Context, o options, out io.Writer) (int, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return 1, fmt.Errorf("redis-server not found (./scripts/deps.sh redis-server=redis-server installs it)")
	}
	dir, err := os.MkdirTemp("", "chaossoak-")
	if err != nil {
		return 1, err
	}
	keep := o.keep
	defer func() {
		if keep {
			fmt.Fprintln(out, "kept", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	c := &cluster{dir: dir, out: out, sup: &bench.Supervisor{Dir: dir, Name: "chaossoak"}, longPoll: o.longPoll,
		http: &http.Client{Timeout: 10 * time.Second}}
	defer c.stopAll()
	logf(out, "chaossoak: seed %d, %s of chaos after %s of warm-up, %d runners, %d workspace loops, %.1f jobs/s; directory %s",
		o.seed, o.duration, o.warmup, o.runners, o.workspace, o.jobRate, dir)
	runners, err := newRunners(o.runners, o.seed)
	if err != nil {
		return 1, err
	}
	for _, r := range runners {
		if o.move && r.org == moveOrg {
			c.accept[moveAway-1] = append(c.accept[moveAway-1], r.token)
		}
	}
	if err := c.start(ctx, o.edgeBin); err != nil {
		keep = true
		return 1, err
	}
	version := edgeVersion(ctx, c.edgeBin)
	logf(out, "up: redis %s, cells %s %s %s, edges %s %s %s, agents a1 (edge1) a2 (edge2); %s", c.redisAddr,
		c.cells[0].addr, c.cells[1].addr, c.cells[2].addr, c.edges[0].public, c.edges[1].public, c.edges[2].public, version)

	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	s := &soak{o: o, c: c, out: out, rec: newRecorder(o.seed), client: &http.Client{Transport: transport},
		faults: &eventLog[fault]{}, receipts: map[uint64][]*receipt{}, queued: map[uint64]time.Time{}, t0: time.Now()}
	rng := rand.New(rand.NewPCG(uint64(o.seed), 1))
	witness := rng.IntN(3)

	logf(out, "warm-up: %s of load without faults", o.warmup)
	if err := s.load(ctx, runners, o.warmup, nil); err != nil {
		return 1, err
	}
	transport.CloseIdleConnections()
	if err := sleep(ctx, o.settleMin); err != nil {
		return 1, err
	}
	before := make([]edgeSample, 3)
	for i := range before {
		if before[i], err = s.sampleEdge(ctx, i); err != nil {
			return 1, err
		}
	}
	logf(out, "baseline (idle, %s after the warm-up): %s", o.settleMin, describeSamples(before))

	logf(out, "chaos: %s of load with faults (edge%d is never killed)", o.duration, witness+1)
	chaosStart := time.Now()
	maxSeen := newMaxSamples(before)
	stopSampling := s.sampleMax(ctx, maxSeen)
	err = s.load(ctx, runners, o.duration, func(ctx context.Context, until time.Time) {
		var move sync.WaitGroup
		if o.move {
			move.Go(func() { s.runMove(ctx, time.Now(), until) })
		}
		s.runFaults(ctx, rng, until, witness)
		move.Wait()
	})
	stopSampling()
	if err != nil {
		return 1, err
	}
	chaosEnd := time.Now()

	// Settle: the edges never killed go back to their baseline once idle connections close.
	transport.CloseIdleConnections()
	never := []int{}
	for i, es := range c.edges {
		c.mu.Lock()
		if es.kills == 0 {
			never = append(never, i)
		}
		c.mu.Unlock()
	}
	after, settled := s.settle(ctx, never, before)

	r := s.result(ctx, resultInput{version: version, witness: witness, never: never, before: before, after: after,
		max: maxSeen.get(), settled: settled, chaosStart: chaosStart, chaosEnd: chaosEnd})
	fmt.Fprint(out, "\n"+r.markdown())
	if o.results != "" {
		if err := r.write(o.results); err != nil {
			return 1, err
		}
		fmt.Fprintln(out, "\nwrote", filepath.Join(o.results, "chaos.md"), "and chaos.json")
	}
	if !r.Passed {
		keep = true
		s.dumpGoroutines(r)
		var failed []string
		for _, ch := range r.Checks {
			if !ch.OK {
				failed = append(failed, ch.Name)
			}
		}
		fmt.Fprintln(out, "FAILED:", strings.Join(failed, "; "))
		return 1, nil
	}
	fmt.Fprintln(out, "PASSED")
	return 0, nil
}

func describeSamples(ss []edgeSample) string {
	var parts []string
	for i, x := range ss {
		parts = append(parts, fmt.Sprintf("edge%d %.0f goroutines %.1f MiB", i+1, x.Goroutines, x.RSS/(1<<20)))
	}
	return strings.Join(parts, ", ")
}

func edgeVersion(ctx context.Context, bin string) string {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "edge version: " + err.Error()
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// load runs the runners, the workspace loops and the job producer for d (and faults, when given,
// until the same end), then drains: the producer stops, the runners go on until the cells have
// no queued job left and no runner is in a job, and stop after their current poll.
func (s *soak) load(ctx context.Context, runners []*runner, d time.Duration, faults func(context.Context, time.Time)) error {
	until := time.Now().Add(d)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	var runnersWG, othersWG sync.WaitGroup
	for _, r := range runners {
		runnersWG.Go(func() { s.runRunner(runCtx, r, &stop) })
	}
	for w := range s.o.workspace {
		rng := rand.New(rand.NewPCG(uint64(s.o.seed)+s.phase, uint64(200+w)))
		othersWG.Go(func() { s.runWorkspace(runCtx, w+1, rng, until) })
	}
	producerRng := rand.New(rand.NewPCG(uint64(s.o.seed)+s.phase, 300))
	s.phase++
	othersWG.Go(func() { s.produce(runCtx, producerRng, until) })
	if faults != nil {
		othersWG.Go(func() { faults(runCtx, until) })
	}
	done := make(chan struct{})
	go func() { othersWG.Wait(); close(done) }()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			break wait
		case <-tick.C:
			s.progress()
		}
	}
	// Drain: every queued job handed out and worked.
	drainEnd := time.Now().Add(s.o.longPoll + 90*time.Second)
	for time.Now().Before(drainEnd) {
		pending := 0
		for i := range s.c.cells {
			st, err := s.cellStats(ctx, i)
			if err != nil {
				pending++ // a cell that does not answer: try again
				continue
			}
			pending += st.Pending
		}
		if pending == 0 && s.busy.Load() == 0 {
			break
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	stop.Store(true)
	stopped := make(chan struct{})
	go func() { runnersWG.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(s.o.longPoll + 80*time.Second):
		logf(s.out, "runners still busy %s after the drain: stopping them", s.o.longPoll+80*time.Second)
		cancel()
		<-stopped
	}
	s.progress()
	return nil
}

func (s *soak) progress() {
	total, failed, edge5xx := s.rec.counts()
	s.jobsMu.Lock()
	queued, received, finished := len(s.queued), len(s.receipts), 0
	for _, rcs := range s.receipts {
		if len(rcs) > 0 && rcs[0].Finished {
			finished++
		}
	}
	s.jobsMu.Unlock()
	logf(s.out, "t=%4.0fs jobs queued %d received %d finished %d; requests %d, failed %d (edge 5xx %d); faults %d",
		time.Since(s.t0).Seconds(), queued, received, finished, total, failed, edge5xx, len(s.faults.snapshot()))
}

// maxSamples keeps the largest goroutines and RSS seen per edge.
type maxSamples struct {
	mu sync.Mutex
	v  []edgeSample
}

func newMaxSamples(before []edgeSample) *maxSamples {
	return &maxSamples{v: append([]edgeSample(nil), before...)}
}

func (m *maxSamples) note(i int, x edgeSample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.v[i].Goroutines = max(m.v[i].Goroutines, x.Goroutines)
	m.v[i].RSS = max(m.v[i].RSS, x.RSS)
	m.v[i].Heap = max(m.v[i].Heap, x.Heap)
}

func (m *maxSamples) get() []edgeSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]edgeSample(nil), m.v...)
}

// sampleMax reads every edge's metrics every 2 s (an edge that is down is skipped) until the
// returned function is called.
func (s *soak) sampleMax(ctx context.Context, m *maxSamples) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sleep(ctx, 2*time.Second) == nil {
			for i := range s.c.edges {
				if x, err := s.sampleEdge(ctx, i); err == nil {
					m.note(i, x)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Bounds of "back near the baseline" for an edge never killed, once the load has stopped: the
// goroutines within 10 (or 10 %) of the baseline, the RSS within 1.5 times it plus 16 MiB (the Go
// runtime gives freed memory back to the kernel over minutes, not at once).
func goroutineLimit(before float64) float64 { return before + max(10, before/10) }
func rssLimit(before float64) float64       { return before*1.5 + 16<<20 }

// settle waits at least -settle-min, and up to -settle, for the edges never killed to be back
// within the bounds, and returns the last reading of every edge and how long it took (-1: not
// within -settle).
func (s *soak) settle(ctx context.Context, never []int, before []edgeSample) ([]edgeSample, time.Duration) {
	start := time.Now()
	after := make([]edgeSample, 3)
	logf(s.out, "load stopped; waiting %s to %s for the edges never killed to settle", s.o.settleMin, s.o.settleMax)
	for {
		ok := true
		for i := range s.c.edges {
			x, err := s.sampleEdge(ctx, i)
			if err != nil {
				ok = false
				continue
			}
			after[i] = x
			if slices.Contains(never, i) && (x.Goroutines > goroutineLimit(before[i].Goroutines) || x.RSS > rssLimit(before[i].RSS)) {
				ok = false
			}
		}
		if ok && time.Since(start) >= s.o.settleMin {
			logf(s.out, "settled after %.0fs: %s", time.Since(start).Seconds(), describeSamples(after))
			return after, time.Since(start)
		}
		if time.Since(start) > s.o.settleMax || sleep(ctx, 2*time.Second) != nil {
			logf(s.out, "not settled after %s: %s", s.o.settleMax, describeSamples(after))
			return after, -1
		}
	}
}

// dumpGoroutines sends SIGQUIT to each never-killed edge over its goroutine limit: the Go runtime
// writes every goroutine's stack to the edge's log (kept) and exits.
func (s *soak) dumpGoroutines(r result) {
	for i, e := range r.Edges {
		if !e.NeverKilled || e.GoroutinesAfter <= e.GoroutinesLimit {
			continue
		}
		s.c.mu.Lock()
		p := s.c.edges[i].proc
		s.c.mu.Unlock()
		if err := p.Signal(syscall.SIGQUIT); err != nil {
			continue
		}
		select {
		case <-p.Done():
			fmt.Fprintf(s.out, "%s's goroutines (SIGQUIT): %s\n", e.Edge, p.Log)
		case <-time.After(10 * time.Second):
		}
	}
}
