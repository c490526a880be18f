package registry

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// crashingStore is a store with a bug: its lookups, or its probes, panic while set.
type crashingStore struct {
	store
	lookups, probes atomic.Bool
}

func (s *crashingStore) agents(ctx context.Context, ids []string) (map[string]map[string][]ConnInfo, error) {
	if s.lookups.Load() {
		panic("test: the store's lookup crashed")
	}
	return s.store.agents(ctx, ids)
}

func (s *crashingStore) probe(ctx context.Context, edge, agentID string) (bool, error) {
	if s.probes.Load() {
		panic("test: the store's probe crashed")
	}
	return s.store.probe(ctx, edge, agentID)
}

// TestRegistryPanicsContained: a wait loop whose lookup panics ends its wait with
// ErrUnavailable at once (not when the waiter gives up), and a round of Run that panics
// is that round only: Run goes on. Each is counted as registry; the registry serves afterwards.
func TestRegistryPanicsContained(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := guard.New(slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{PollMin: 10 * time.Millisecond, PollMax: 10 * time.Millisecond,
		HealthInterval: 10 * time.Millisecond, UnregisterDelay: -1, Guard: g}.withDefaults()
	st := &crashingStore{store: &memoryView{st: NewMemoryStore(), now: time.Now}}
	r, err := newRegistry(st, opts, "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func() float64 { return g.Contained("registry") }

	st.lookups.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := r.Wait(ctx, "agent-1"); !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
		t.Errorf("wait through a crashing lookup: %v after %v, want ErrUnavailable at once", err, time.Since(start))
	}
	if got := count(); got != 1 {
		t.Errorf("edge_panics_total{where=registry} after the wait: got %v, want 1", got)
	}

	st.probes.Store(true)
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- r.Run(runCtx) }()
	poll.Until(t, 5*time.Second, "two crashed rounds", func() bool { return count() >= 3 })
	select {
	case err := <-ran:
		t.Fatalf("Run ended after a round crashed: %v", err)
	default:
	}
	st.lookups.Store(false)
	st.probes.Store(false)
	if err := r.Register(ctx, ConnInfo{AgentID: "agent-1", ConnectionID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if conns, err := r.Wait(ctx, "agent-1"); err != nil || len(conns) != 1 {
		t.Errorf("wait after the crashes: %v, %v; want the connection", conns, err)
	}
	stopRun()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
}
