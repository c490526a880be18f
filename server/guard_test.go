package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

func newTestGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// crashingLog is a log output whose writes crash while crash is set.
type crashingLog struct {
	mu    sync.Mutex
	out   bytes.Buffer
	crash atomic.Bool
}

func (w *crashingLog) Write(p []byte) (int, error) {
	if w.crash.Load() {
		panic("test: the log output crashed")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

func (w *crashingLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// TestLogFlushPanicContained: a panic in the access log's timed flush is contained as background
// and leaves the buffer usable: its lock is released, and Flush still writes every line.
func TestLogFlushPanicContained(t *testing.T) {
	g := newTestGuard(t)
	out := &crashingLog{}
	out.crash.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newLineBuffer(out)
	g.Go("background", func() { b.flushEvery(ctx, 5*time.Millisecond) })
	b.Write([]byte("line 1\n"))
	poll.Until(t, 5*time.Second, "the timed flush's panic counted", func() bool { return g.Contained("background") >= 1 })
	if got := g.Contained("background"); got != 1 {
		t.Errorf("edge_panics_total{where=background}: got %v, want 1", got)
	}
	out.crash.Store(false)
	b.Write([]byte("line 2\n"))
	b.Flush()
	if got, want := out.String(), "line 1\nline 2\n"; got != want {
		t.Errorf("log after the crash: got %q, want %q", got, want)
	}
}

// TestListenerPanicIsItsFailure: a listener whose serving panics reports a failure on the
// stage's error channel (edge drains and exits) instead of leaving a port nobody answers, and a
// panic in its shutdown does not stop the stop; both are counted as listener.
func TestListenerPanicIsItsFailure(t *testing.T) {
	g := newTestGuard(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := &listener{setting: "listen.public", phase: phaseTraffic, ln: ln,
		serve:    func(net.Listener, *tls.Config) error { panic("test: serving crashed") },
		shutdown: func(context.Context) { panic("test: shutdown crashed") },
	}
	errc := make(chan error, 1)
	st := &stages{log: slog.New(slog.DiscardHandler), guard: g}
	if err := st.start(context.Background(), []stage{serveStage(phaseTraffic, []*listener{l}, errc, slog.New(slog.DiscardHandler), g)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !strings.Contains(err.Error(), "listen.public: serving crashed") {
			t.Errorf("failure: got %q, want it to name listen.public and the crash", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a listener that crashed reported no failure")
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		st.stop(context.Background())
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the stop did not return after a shutdown crashed")
	}
	if got := g.Contained("listener"); got != 2 {
		t.Errorf("edge_panics_total{where=listener}: got %v, want 2 (serve and shutdown)", got)
	}
}

// TestReloadPanicIsRefused: a reload that panics (here a module building its routes) is refused
// as a bad file is: the running config stays, the status and edge_config_reloads_total say error,
// and reload counts it.
func TestReloadPanicIsRefused(t *testing.T) {
	const path = "../examples/edge.yaml"
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := build(cfg, Options{Path: path}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	e.modules = append(e.modules, module{name: "crashing",
		routes: func(*config.Config, *table) error { panic("test: routes crashed") }})
	e.reload.reload("test")
	if got := e.guard.Contained("reload"); got != 1 {
		t.Errorf("edge_panics_total{where=reload}: got %v, want 1", got)
	}
	if got := e.reload.config(); got != cfg {
		t.Error("the running config changed after a crashed reload")
	}
	st := e.status(context.Background()).Edge.LastReload
	if st.Result != "error" || !strings.Contains(st.Error, "crashed") || st.Generation != 1 {
		t.Errorf("last reload: got %+v, want error (crashed), generation 1", st)
	}
	if got := testutil.ToFloat64(e.reload.reloads.WithLabelValues("error")); got != 1 {
		t.Errorf("edge_config_reloads_total{result=error}: got %v, want 1", got)
	}
}
