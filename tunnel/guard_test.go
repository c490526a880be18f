package tunnel

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

func waitPanics(t *testing.T, g *guard.Guard, where string, want float64) {
	t.Helper()
	poll.Until(t, 5*time.Second, "edge_panics_total{where="+where+"} counted", func() bool { return g.Contained(where) >= want })
	if got := g.Contained(where); got != want {
		t.Errorf("edge_panics_total{where=%s}: got %v, want %v", where, got, want)
	}
}

// crashingTransport panics on every request while crash is set: a bug in what serves a stream.
type crashingTransport struct {
	*http.Transport
	crash *atomic.Bool
}

func (c crashingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.crash.Load() {
		panic("test: the upstream transport crashed")
	}
	return c.Transport.RoundTrip(r)
}

// TestStreamHandlerPanicIs502: a panic serving a stream at the agent ends that stream with 502,
// counted as tunnel_stream; the connection stays and serves the next request.
func TestStreamHandlerPanicIs502(t *testing.T) {
	g := newTestGuard(t)
	var crash atomic.Bool
	crash.Store(true)
	e := newEnv(t, envOptions{agent: func(o *AgentOptions) {
		o.Guard, o.PerRequest = g, true // per request: the agent parses it, through WrapTransport
		o.WrapTransport = func(t *http.Transport) RoundTripCloser { return crashingTransport{t, &crash} }
	}})
	conns := e.waitConnected(1)
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusBadGateway {
		t.Errorf("crashed stream: got %d, want 502", status)
	}
	waitPanics(t, g, "tunnel_stream", 1)
	crash.Store(false)
	if status, body := get(t, e.url("/hello"), nil); status != http.StatusOK || body != "hello from upstream" {
		t.Errorf("after the crash: got %d %q, want 200 from the upstream", status, body)
	}
	if now := e.server.Lookup(testAgent); len(now) != 1 || now[0] != conns[0] {
		t.Errorf("the connection did not survive its stream's crash: %d connection(s) now", len(now))
	}
}

// panicOnRead is a connection whose reads crash.
type panicOnRead struct{ net.Conn }

func (panicOnRead) Read([]byte) (int, error) { panic("test: a read crashed") }

// TestRelayPanicClosesBoth: a panic in the way Relay runs itself closes both connections, so the
// caller's way ends too and Relay returns; splice_relay counts it.
func TestRelayPanicClosesBoth(t *testing.T) {
	g := newTestGuard(t)
	a, aPeer := net.Pipe()
	b, bPeer := net.Pipe()
	defer aPeer.Close()
	defer bPeer.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Relay(panicOnRead{a}, b, nil, &BufferPool{}, g)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Relay still runs after one of its ways crashed")
	}
	bPeer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bPeer.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("b's peer reads %v, want EOF (b closed)", err)
	}
	waitPanics(t, g, "splice_relay", 1)
}

// panicWriter crashes on every write.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("test: a write crashed") }

// TestFlusherPanicFailsTheWriter: a panic in the frame flusher fails the writer (the session's
// send loop gets an error and the connection closes) instead of leaving it waiting for a flusher
// that is gone; the lock is released, and tunnel_flush counts it.
func TestFlusherPanicFailsTheWriter(t *testing.T) {
	g := newTestGuard(t)
	f := newFrameWriter(panicWriter{})
	f.guard = g
	if _, err := f.Write([]byte("a small frame")); err != nil {
		t.Fatalf("first write (queued): %v", err)
	}
	waitPanics(t, g, "tunnel_flush", 1)
	var err error
	poll.Until(t, 5*time.Second, "the writer fails", func() bool {
		_, err = f.Write([]byte("another frame"))
		return err != nil
	})
	if !errors.Is(err, errFlusherCrashed) {
		t.Errorf("write after the crash: got %v, want errFlusherCrashed", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- f.close(io.NopCloser(nil)) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("close waits for a flusher that crashed")
	}
}
