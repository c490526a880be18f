package registry_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/registry/registrytest"
)

func TestMemoryRegistryContract(t *testing.T) {
	registrytest.Run(t, func(t *testing.T) registrytest.NewEdge {
		st := registry.NewMemoryStore()
		return func(t *testing.T, _ string, opts registry.Options) registry.Registry {
			r, err := registry.NewMemory(st, opts, testLogger(t))
			if err != nil {
				t.Fatalf("new memory registry: %v", err)
			}
			return r
		}
	})
}

// The single-instance default: a private store, defaults everywhere, no internal URL.
func TestMemoryRegistrySingleInstance(t *testing.T) {
	r, err := registry.NewMemory(nil, registry.Options{}, nil)
	if err != nil {
		t.Fatalf("new memory registry: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waited := make(chan []registry.ConnInfo, 1)
	go func() {
		conns, _ := r.Wait(ctx, "agent-1")
		waited <- conns
	}()
	if err := r.Register(ctx, registrytest.Conn("agent-1", "proj-1", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}
	if got := <-waited; len(got) != 1 || got[0].Edge != "" {
		t.Errorf("wait: got %+v, want one connection with no edge URL", got)
	}
	if got, err := r.ByProject(ctx, "proj-1"); err != nil || len(got) != 1 {
		t.Errorf("by project: got %+v, %v, want one connection", got, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: got %v, want nil", err)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Logf("%s", p)
	return len(p), nil
}
