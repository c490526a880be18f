package main

import (
	"context"
	"fmt"
	"log/slog"
)

// stage is one part of the process that starts after the stages before it and stops before
// them, as GitLab kas's staged start does: listeners come up after the registry they announce
// into, and a drain stops announcing before it stops listening.
type stage struct {
	name  string
	start func() error
	stop  func(ctx context.Context)
}

// stages run in order and stop in reverse.
type stages struct {
	log     *slog.Logger
	started []stage
}

// start starts each stage; on a failure it stops those already started and returns the error.
func (s *stages) start(ctx context.Context, all ...stage) error {
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
