package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestStagesOwnTheirGoroutines: a stage's lifetime does not end with Serve's context but when
// the stage stops, last first, and each stop returns only once the stage's goroutines have
// ended; a stage that fails to start is not stopped, but what it started ends.
func TestStagesOwnTheirGoroutines(t *testing.T) {
	var mu sync.Mutex
	var ended []string
	newStage := func(name string, fail bool) stage {
		return stage{name: name, start: func(life context.Context, run *goroutines) error {
			run.Go("background", func() {
				<-life.Done()
				mu.Lock()
				defer mu.Unlock()
				ended = append(ended, name)
			})
			if fail {
				return errors.New("test: start failed")
			}
			return nil
		}}
	}
	got := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(ended, " ")
	}
	st := &stages{log: slog.New(slog.DiscardHandler), guard: newTestGuard(t)}
	ctx, cancel := context.WithCancel(context.Background())
	if err := st.start(ctx, []stage{newStage("a", false), newStage("b", false)}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if g := got(); g != "" {
		t.Errorf("ended when Serve's context ended: %q, want none before the stop", g)
	}
	st.stop(context.Background())
	if g := got(); g != "b a" {
		t.Errorf("ended by the stop: got %q, want %q", g, "b a")
	}

	ended = nil
	st = &stages{log: slog.New(slog.DiscardHandler), guard: newTestGuard(t)}
	err := st.start(context.Background(), []stage{newStage("a", false), newStage("c", true), newStage("d", false)})
	if err == nil || !strings.HasPrefix(err.Error(), "c: ") {
		t.Fatalf("start: got %v, want c's failure", err)
	}
	if g := got(); !slices.Equal(strings.Fields(g), []string{"c", "a"}) {
		t.Errorf("ended after a failed start: got %q, want %q", g, "c a")
	}
}
