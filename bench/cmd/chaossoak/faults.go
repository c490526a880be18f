package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The kinds of fault. The first four are a kill -9 and a start of the same thing on the same
// ports; a cell-mid-answer is a cell asked to cut its next answer handing out a job to a parked
// poll in the middle of the body and exit at once (a worker restarted during a deploy), then
// started again like a cell; a runner-reset-parked is runners resetting their connections
// (SO_LINGER 0) while edge has their job requests parked, some after a byte of a next request.
const (
	faultEdge        = "edge"
	faultRedis       = "redis"
	faultCell        = "cell"
	faultAgent       = "agent"
	faultCellCut     = "cell-mid-answer"
	faultRunnerReset = "runner-reset-parked"
)

var faultKinds = []string{faultEdge, faultRedis, faultCell, faultAgent, faultCellCut, faultRunnerReset}

// recoverTimeout bounds how long edge may take, once the faulted thing is back, to see it again.
const recoverTimeout = 60 * time.Second

// fault is one fault and its window.
type fault struct {
	N      int
	Kind   string
	Target string
	Start  time.Time // SIGKILL sent
	Killed time.Time // the process exited
	// End is when the thing was back and ready: an edge's /readyz 200 and the agents it held
	// connected to it again (their reconnect back-off is part of the fault); Redis answering
	// PING; a cell answering its readiness endpoint; an agent listed by its edge. Zero: never.
	End time.Time
	// Recovered is when every edge saw it again: every cell up (edge_cell_up), every agent listed
	// (through the registry for other edges). Zero: not within recoverTimeout.
	Recovered time.Time
	Err       string
	Note      string // what the fault did, beyond its window (the job cut, the polls reset)
}

// runFaults is the fault script: until until, wait a random gap (after the previous fault's
// recovery), then fault the next kind of a shuffled round of the kinds, so each kind comes up
// once a round (-faults: of the kinds given). Edges are drawn from those other than witness, which is never
// killed: its memory and goroutines are the leak check.
func (s *soak) runFaults(ctx context.Context, rng *rand.Rand, until time.Time, witness int) {
	var round []string
	for n := 1; ; n++ {
		gap := s.o.faultMin + time.Duration(rng.Int64N(int64(s.o.faultMax-s.o.faultMin)+1))
		if time.Now().Add(gap).After(until) || sleep(ctx, gap) != nil {
			return
		}
		if len(round) == 0 {
			round = append([]string(nil), s.o.kinds...)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		f := &fault{N: n, Kind: kind}
		var target int
		switch kind {
		case faultEdge:
			others := []int{}
			for i := range s.c.edges {
				if i != witness {
					others = append(others, i)
				}
			}
			target = others[rng.IntN(len(others))]
			f.Target = s.c.edges[target].name
		case faultRedis:
			f.Target = "redis"
		case faultCell, faultCellCut:
			target = rng.IntN(len(s.c.cells))
			f.Target = s.c.cells[target].name
		case faultAgent:
			target = rng.IntN(len(s.c.agents))
			f.Target = s.c.agents[target].name
		case faultRunnerReset:
			f.Target = fmt.Sprintf("%d parked polls", resetRunners)
		}
		down := time.Duration(rng.Int64N(int64(s.o.down) + 1))
		s.faults.add(f)
		var resets []resetPlan
		if kind == faultRunnerReset {
			resets = s.planResets(rng, f.N)
		}
		s.doFault(ctx, f, target, down, resets)
		if ctx.Err() != nil {
			return
		}
	}
}

// doFault stops the target (kill -9, or the cell's cut and exit), waits down, starts it again,
// and notes when it was back and when every edge saw it again. A runner-reset-parked has
// nothing to start again: it is over when its runners have reset.
func (s *soak) doFault(ctx context.Context, f *fault, target int, down time.Duration, resets []resetPlan) {
	c := s.c
	var sl *slot
	var restart func() error
	stop := func() error { return c.kill(sl) }
	what := fmt.Sprintf("kill -9 %s, down for %.1fs", f.Target, down.Seconds())
	switch f.Kind {
	case faultEdge:
		es := c.edges[target]
		sl = &es.slot
		restart = func() error {
			if err := c.startEdge(ctx, target); err != nil {
				return err
			}
			for j, as := range c.agents {
				if as.home != target {
					continue
				}
				if err := waitFor(ctx, agentWait, func() bool { return c.agentHeldBy(ctx, j, target) }); err != nil {
					return fmt.Errorf("%s did not connect to %s again: %w", as.name, es.name, err)
				}
			}
			return nil
		}
	case faultRedis:
		sl = c.redis
		restart = func() error { return c.startRedis(ctx) }
	case faultCell:
		sl = &c.cells[target].slot
		restart = func() error { return c.startCell(ctx, target) }
	case faultAgent:
		sl = &c.agents[target].slot
		restart = func() error { return c.startAgent(ctx, target) }
	case faultCellCut:
		sl = &c.cells[target].slot
		stop = func() error { return s.cutAnswer(ctx, f, target) }
		restart = func() error { return c.startCell(ctx, target) }
		what = fmt.Sprintf("%s to cut its next answer handing out a job to a poll held %s and exit, down for %.1fs", f.Target, cutHeld, down.Seconds())
	case faultRunnerReset:
		stop = func() error { return s.resetParked(ctx, f, resets) }
		what = fmt.Sprintf("%d runners reset their job requests once parked", len(resets))
	}
	logf(s.out, "fault %d: %s", f.N, what)
	s.faults.update(f, func(f *fault) { f.Start = time.Now() })
	if err := stop(); err != nil {
		logf(s.out, "fault %d: %v", f.N, err)
		s.faults.update(f, func(f *fault) { f.Err = err.Error() })
		return
	}
	s.faults.update(f, func(f *fault) { f.Killed = time.Now() })
	if restart != nil {
		if err := sleep(ctx, down); err != nil {
			return
		}
		if err := restart(); err != nil {
			logf(s.out, "fault %d: %s not back: %v", f.N, f.Target, err)
			s.faults.update(f, func(f *fault) { f.Err = err.Error() })
			return
		}
		c.up(sl)
	}
	s.faults.update(f, func(f *fault) { f.End = time.Now() })
	var why string
	err := waitFor(ctx, recoverTimeout, func() bool {
		for i := range c.edges {
			if ok, w := c.edgeSeesAll(ctx, i); !ok {
				why = fmt.Sprintf("edge%d: %s", i+1, w)
				return false
			}
		}
		return true
	})
	snap := s.faults.snapshot()[f.N-1]
	back := fmt.Sprintf("%s back after %.1fs", f.Target, snap.End.Sub(snap.Start).Seconds())
	if restart == nil {
		back = fmt.Sprintf("over after %.1fs", snap.End.Sub(snap.Start).Seconds())
	}
	if err != nil {
		logf(s.out, "fault %d: %s, but the edges did not all see every cell and agent within %s: %s", f.N, back, recoverTimeout, why)
		return
	}
	s.faults.update(f, func(f *fault) { f.Recovered = time.Now() })
	logf(s.out, "fault %d: %s, seen by every edge %.1fs later", f.N, back, time.Since(snap.End).Seconds())
}

// waitFor calls cond every 100 ms until it is true, timeout passes or ctx ends.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}
