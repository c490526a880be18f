package server

import (
	"context"
	"fmt"
	"log/slog"

	"gitlab.com/edge/edge/internal/guard"
)

// stages run in order and stop in reverse.
type stages struct {
	log     *slog.Logger
	started []stage
}

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
func (s *stages) start(ctx context.Context, all []stage) error {
	for _, st := range all {
		if st.start != nil {
			if err := st.start(); err != nil {
				s.stop(ctx)
				return fmt.Errorf("%s: %w", st.name, err)
			}
		}
		s.started = append(s.started, st)
	}
	return nil
}

// stop stops the started stages, last first.
func (s *stages) stop(ctx context.Context) {
	for i := len(s.started) - 1; i >= 0; i-- {
		st := s.started[i]
		if st.stop != nil {
			s.log.Debug("stopping", "stage", st.name)
			st.stop(ctx)
		}
	}
	s.started = nil
}
