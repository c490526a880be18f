package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"gitlab.com/edge/edge/internal/guard"
)

// stages run in order and stop in reverse. Each started stage has a lifetime context, which
// ends when the stage stops, and the goroutines it started, which its stop awaits.
type stages struct {
	log     *slog.Logger
	guard   *guard.Guard
	started []started
}

// started is one stage that is running.
type started struct {
	stage
	end context.CancelFunc // ends the lifetime context its start got
	run *goroutines
}

// goroutines are what a stage runs in the background: each under the guard, and all of them
// ended before the stage's stop returns.
type goroutines struct {
	wg    sync.WaitGroup
	guard *guard.Guard
}

// Go runs f on a goroutine of the stage; a panic in it is contained as where.
func (r *goroutines) Go(where string, f func()) { r.wg.Go(r.guard.Func(where, f)) }

// ordered is every stage of the modules by phase, module order within a phase, with the
// listeners of a phase served by one stage at its start.
func ordered(mods []module, errc chan<- error, log *slog.Logger, g *guard.Guard) []stage {
	var out []stage
	for p := range numPhases {
		var lns []*listener
		for _, m := range mods {
			for _, l := range m.listeners {
				if l.phase == p && l.addr != "" {
					lns = append(lns, l)
				}
			}
		}
		if len(lns) > 0 {
			out = append(out, serveStage(p, lns, errc, log, g))
		}
		for _, m := range mods {
			for _, s := range m.stages {
				if s.phase == p {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// start starts each stage; on a failure it stops those already started and returns the error.
// The stages' lifetimes do not end with ctx: a drain stops them one by one, in reverse.
func (s *stages) start(ctx context.Context, all []stage) error {
	for _, st := range all {
		life, end := context.WithCancel(context.WithoutCancel(ctx))
		run := &goroutines{guard: s.guard}
		if st.start != nil {
			if err := st.start(life, run); err != nil {
				// Not stopped, as it did not start; what it started before failing ends.
				end()
				run.wg.Wait()
				s.stop(ctx)
				return fmt.Errorf("%s: %w", st.name, err)
			}
		}
		s.started = append(s.started, started{stage: st, end: end, run: run})
	}
	return nil
}

// stop stops the started stages, last first: each one's lifetime ends, its stop runs, and its
// goroutines are awaited before the next stage stops.
func (s *stages) stop(ctx context.Context) {
	for i := len(s.started) - 1; i >= 0; i-- {
		st := s.started[i]
		s.log.Debug("stopping", "stage", st.name)
		st.end()
		if st.stop != nil {
			st.stop(ctx)
		}
		st.run.wg.Wait()
	}
	s.started = nil
}
