package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

const (
	pollRate      = 2000.0           // new long polls per second, all clients together: a burst of 10,000 connects would overflow edge's accept queue (somaxconn) and measure SYN retries
	otherConns    = 32               // keep-alive connections of the other traffic, all clients together
	answerGrace   = 60 * time.Second // edge's long_poll_timeout is the hold plus this, so edge never cuts a poll
	answerWait    = 45 * time.Second // after the release and the other traffic, how long the clients wait for answers
	progressEvery = 5 * time.Second
)

// soak is one run: its directory, its processes and where they listen.
type soak struct {
	o      options
	plan   fdPlan
	out    io.Writer
	sup    *bench.Supervisor
	http   *http.Client
	self   string
	cell   *bench.Proc
	cellCo string // the cell's control listener
	edge   *bench.Proc
	public string // edge's public listener
	ops    string // edge's ops listener
}

func run(ctx context.Context, o options, out io.Writer) (int, error) {
	hard, err := raiseFileLimit()
	if err != nil {
		return 1, err
	}
	plan, err := planFDs(o.polls, hard)
	if err != nil {
		return 1, err
	}
	if msg := plan.message(); msg != "" {
		fmt.Fprintln(out, msg)
	}
	if ports, err := ephemeralPorts(); err == nil && plan.Polls+otherConns+100 > ports {
		return 1, fmt.Errorf("%d long polls need as many local ports to one edge, the local port range has %d", plan.Polls, ports)
	}
	if need := time.Duration(float64(plan.Polls)/pollRate*float64(time.Second)) + 5*time.Second; o.hold < need {
		return 2, fmt.Errorf("-hold %s is too short: opening %d polls at %.0f/s takes %s", o.hold, plan.Polls, pollRate, need-5*time.Second)
	}
	self, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("find this binary to start the cell and the clients: %w", err)
	}
	dir, err := os.MkdirTemp("", "longpollsoak-")
	if err != nil {
		return 1, fmt.Errorf("temp dir: %w", err)
	}
	if o.keep {
		defer fmt.Fprintln(out, "kept", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	s := &soak{o: o, plan: plan, out: out, sup: &bench.Supervisor{Dir: dir, Name: "longpollsoak"}, http: &http.Client{Timeout: 10 * time.Second}, self: self}
	defer s.sup.StopAll()
	if err := s.start(ctx, dir); err != nil {
		return 1, err
	}
	r, err := s.measure(ctx)
	if err != nil {
		return 1, err
	}
	fmt.Fprint(out, "\n"+r.markdown())
	if o.results != "" {
		if err := r.write(o.results); err != nil {
			return 1, err
		}
		fmt.Fprintln(out, "\nwrote", filepath.Join(o.results, "longpoll.json"), "and longpoll.md")
	}
	if why := r.failed(); len(why) > 0 {
		fmt.Fprintln(out, "FAILED:", strings.Join(why, "; "))
		return 1, nil
	}
	return 0, nil
}

// start builds edge and starts the cell and edge, edge ready when its /readyz is 200.
func (s *soak) start(ctx context.Context, dir string) error {
	edgeBin := s.o.edgeBin
	if edgeBin == "" {
		fmt.Fprintln(s.out, "building edge")
		var err error
		if edgeBin, err = bench.GoBuild(ctx, dir, "./cmd/edge", "edge"); err != nil {
			return err
		}
	}
	// The cells listen on 127.0.0.2 and .3 and edge on .1: connections to different
	// destinations may share local ports, so both sides of edge fit in the port range.
	cellProc, err := s.sup.Start("cell", []string{s.self, cellCommand, "-legacy", "127.0.0.2:0", "-cell2", "127.0.0.3:0", "-control", "127.0.0.1:0"}, bench.StartOptions{Stdout: true})
	if err != nil {
		return err
	}
	addrs, err := cellAddrs(ctx, cellProc)
	if err != nil {
		return err
	}
	s.cell, s.cellCo = cellProc, addrs["control"]
	if s.public, err = bench.FreeAddr("127.0.0.1"); err != nil {
		return err
	}
	if s.ops, err = bench.FreeAddr("127.0.0.1"); err != nil {
		return err
	}
	conf := filepath.Join(dir, "edge.yaml")
	cfg := edgeConfig(s.public, s.ops, addrs["legacy"], addrs["cell2"], s.o.hold+answerGrace, s.plan.Polls+1000)
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("write edge config: %w", err)
	}
	if s.edge, err = s.sup.Start("edge", []string{edgeBin, "serve", "--config", conf}, bench.StartOptions{Stdout: true}); err != nil {
		return err
	}
	return waitReady(ctx, s.edge, "http://"+s.ops+"/readyz")
}

// measure runs the soak and gathers the result.
func (s *soak) measure(ctx context.Context) (result, error) {
	toks, err := mintTokens()
	if err != nil {
		return result{}, err
	}
	if err := s.checkRoutes(ctx, toks); err != nil {
		return result{}, err
	}
	metrics := "http://" + s.ops + "/metrics"
	gBefore, err := scrape(ctx, s.http, metrics, edgeMetrics...)
	if err != nil {
		return result{}, err
	}
	mem := &memSampler{pid: s.edge.PID()}
	mem.sample()
	rssBefore := mem.reading().Last
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go mem.run(sampleCtx)
	cpu0, err := bench.ReadProcStat("/proc", s.edge.PID())
	if err != nil {
		return result{}, err
	}
	cpuFrom := time.Now()

	start := time.Now().Add(time.Second) // the clients' time to start
	release := start.Add(s.o.hold)
	otherEnd := start.Add(s.o.dur)
	deadline := otherEnd.Add(answerWait)
	fmt.Fprintf(s.out, "soak: %d long polls at %.0f/s, %.0f other req/s for %s, the cell holds the polls for %s\n",
		s.plan.Polls, pollRate, s.o.rps, s.o.dur, s.o.hold)
	clients, err := s.startClients(toks, start, otherEnd, deadline)
	if err != nil {
		return result{}, err
	}
	if err := s.progress(ctx, start, release, mem, metrics); err != nil {
		return result{}, err
	}
	gHeld, err := scrape(ctx, s.http, metrics, edgeMetrics...)
	if err != nil {
		return result{}, err
	}
	atRelease, err := s.cellStats(ctx)
	if err != nil {
		return result{}, err
	}
	if err := s.release(ctx); err != nil {
		return result{}, err
	}
	fmt.Fprintf(s.out, "released %d held polls; waiting for the answers\n", atRelease.Held)
	res, err := s.waitClients(ctx, clients, deadline.Add(15*time.Second))
	if err != nil {
		return result{}, err
	}
	cpu1, err := bench.ReadProcStat("/proc", s.edge.PID())
	if err != nil {
		return result{}, err
	}
	elapsed := time.Since(cpuFrom)
	fmt.Fprintf(s.out, "all clients done after %s; waiting %s before counting goroutines\n", time.Since(start).Round(time.Second), s.o.settle)
	if err := waitUntil(ctx, time.Now().Add(s.o.settle)); err != nil {
		return result{}, err
	}
	gAfter, err := scrape(ctx, s.http, metrics, edgeMetrics...)
	if err != nil {
		return result{}, err
	}
	mem.sample()
	stopSampling()
	m := mem.reading()
	if m.Err != nil {
		return result{}, fmt.Errorf("edge's memory: %w", m.Err)
	}
	end, err := s.cellStats(ctx)
	if err != nil {
		return result{}, err
	}
	if s.edge.Exited() {
		return result{}, s.edge.Failure()
	}

	r := result{
		PollsRequested:   s.plan.Requested,
		PollsHeld:        int(atRelease.Held),
		LimitedBy:        s.plan.LimitedBy,
		DurationS:        s.o.dur.Seconds(),
		OtherRPSTarget:   s.o.rps,
		EdgeRSSMaxMiB:    round1(mib(m.Max)),
		EdgeRSSEndMiB:    round1(mib(m.Last)),
		EdgeHWMMiB:       round1(mib(m.HWM)),
		GoroutinesBefore: int(gBefore[metricGoroutines]),
		GoroutinesHeld:   int(gHeld[metricGoroutines]),
		GoroutinesAfter:  int(gAfter[metricGoroutines]),
		Answered:         res.Polls.Answered,
		Answered204:      res.Polls.Answered204,
		Errors:           res.Polls.Errors,
		Edge5xx:          res.Polls.Edge5xx + res.Other.Edge5xx,
		Retried:          end.Retried,
		EdgeCPUS:         round1((cpu1.CPU() - cpu0.CPU()).Seconds()),
		PollsPlanned:     s.plan.Polls,
		Lost:             s.plan.Polls - res.Polls.Answered204,
		HoldS:            s.o.hold.Seconds(),
		PollRate:         pollRate,
		ClientProcs:      s.plan.Clients,
		EdgeRSSBeforeMiB: round1(mib(rssBefore)),
		OtherRequests:    res.Other.Sent,
		OtherLate:        res.Other.Late,
		OtherErrors:      res.Other.Errors,
		CellCanceled:     end.Canceled,
		SettleS:          s.o.settle.Seconds(),
		ElapsedS:         round1(elapsed.Seconds()),
		HeapBeforeMiB:    round1(gBefore[metricHeapInuse] / (1 << 20)),
		HeapHeldMiB:      round1(gHeld[metricHeapInuse] / (1 << 20)),
		StacksBeforeMiB:  round1(gBefore[metricStackInuse] / (1 << 20)),
		StacksHeldMiB:    round1(gHeld[metricStackInuse] / (1 << 20)),
	}
	if res.Other.Seconds > 0 {
		r.OtherRPSAchieved = round1(float64(res.Other.OK) / res.Other.Seconds)
	}
	for _, samples := range [][]string{res.Polls.Samples, res.Other.Samples} {
		for _, e := range samples {
			fmt.Fprintln(s.out, "error sample:", e)
		}
	}
	if end.NoID > 0 || end.WrongCell > 0 {
		fmt.Fprintf(s.out, "the cell saw %d job requests without a poll id and %d at the legacy cell\n", end.NoID, end.WrongCell)
	}
	return r, nil
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// progress prints what edge holds every few seconds until the release, and fails when edge or
// the cell exits.
func (s *soak) progress(ctx context.Context, start, release time.Time, mem *memSampler, metrics string) error {
	for next := start.Add(progressEvery); ; next = next.Add(progressEvery) {
		if err := waitUntil(ctx, minTime(next, release)); err != nil {
			return err
		}
		for _, p := range []*bench.Proc{s.edge, s.cell} {
			if p.Exited() {
				return p.Failure()
			}
		}
		if !next.Before(release) {
			return nil
		}
		cs, err := s.cellStats(ctx)
		if err != nil {
			return err
		}
		g, _ := scrape(ctx, s.http, metrics, metricGoroutines)
		mem.sample()
		fmt.Fprintf(s.out, "t=%3.0fs held=%d edge rss=%.1fMiB goroutines=%.0f\n",
			time.Since(start).Seconds(), cs.Held, mib(mem.reading().Last), g[metricGoroutines])
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
