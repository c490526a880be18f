package tunnel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

func TestBadToken(t *testing.T) {
	e := newEnv(t, envOptions{token: "forged"})
	poll.Until(t, 15*time.Second, "agent reports the refusal", func() bool { return e.agent.Status().LastError != nil })
	err := e.agent.Status().LastError
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("agent error: got %v, want a StatusError 401", err)
	}
	if !errors.Is(err, ErrUnauthorized) {
		t.Errorf("errors.Is(%v, ErrUnauthorized): got false, want true", err)
	}
	if se.Message != "invalid agent token" {
		t.Errorf("message: got %q, want the edge's error", se.Message)
	}
	if got := e.server.Lookup(testAgent); len(got) != 0 {
		t.Errorf("connections: got %d, want 0", len(got))
	}
}

func TestConnectRefusals(t *testing.T) {
	s, err := NewServer(ServerOptions{Verify: verifyTest, WriteError: testWriteError})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no upgrade", http.Header{"Authorization": {"Bearer good-a"}}, http.StatusUpgradeRequired},
		{"other protocol", http.Header{"Authorization": {"Bearer good-a"}, "Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, http.StatusUpgradeRequired},
		{"no token", http.Header{"Connection": {"Upgrade"}, "Upgrade": {UpgradeToken}}, http.StatusUnauthorized},
		{"basic auth", http.Header{"Authorization": {"Basic Z29vZC1h"}, "Connection": {"Upgrade"}, "Upgrade": {UpgradeToken}}, http.StatusUnauthorized},
		{"bad token", http.Header{"Authorization": {"Bearer bad"}, "Connection": {"Upgrade"}, "Upgrade": {UpgradeToken}}, http.StatusUnauthorized},
		{"bad info", http.Header{"Authorization": {"Bearer good-a"}, "Connection": {"keep-alive, Upgrade"}, "Upgrade": {UpgradeToken}, InfoHeader: {"{"}}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, ConnectPath, nil)
			req.Header = tt.header
			rec := newRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("status: got %d, want %d (%s)", rec.Code, tt.want, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type: got %q, want application/json", ct)
			}
			if strings.Contains(rec.Body.String(), "Z29vZC1h") || strings.Contains(rec.Body.String(), "bad\"") {
				t.Errorf("body echoes the credential: %s", rec.Body)
			}
		})
	}
}

func TestReconnectAfterEdgeKillsSession(t *testing.T) {
	e := newEnv(t, envOptions{})
	first := e.waitConnected(1)[0]
	first.Close()
	recv(t, first.Done(), "first connection gone")
	poll.Until(t, 15*time.Second, "agent reconnected", func() bool {
		c := e.server.Lookup(testAgent)
		return len(c) == 1 && c[0].ID() != first.ID()
	})
	if status, body := get(t, e.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("after reconnect: got %d %q, want 200", status, body)
	}
}

func TestStreamCap(t *testing.T) {
	e := newEnv(t, envOptions{server: func(o *ServerOptions) { o.MaxStreamsPerAgent = 2 }})
	e.waitConnected(1)
	var wg sync.WaitGroup
	for _, id := range []string{"b1", "b2"} {
		wg.Go(func() {
			status, body, err := fetch(e.url("/block?id="+id), nil)
			if err != nil || status != http.StatusOK || body != "first part;second part" {
				t.Errorf("blocked request %s: got %d %q %v, want 200 and the whole body", id, status, body, err)
			}
		})
	}
	recv(t, e.upstream.arrived, "first blocked request")
	recv(t, e.upstream.arrived, "second blocked request")

	req, _ := http.NewRequest(http.MethodGet, "http://agent/hello", nil)
	req.Header.Set(PortHeader, "1")
	if _, err := e.server.Transport(testAgent).RoundTrip(req); !errors.Is(err, ErrTooManyStreams) {
		t.Errorf("third stream: got %v, want ErrTooManyStreams", err)
	}
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusServiceUnavailable {
		t.Errorf("third request through the proxy: got %d, want 503", status)
	}
	close(e.upstream.release)
	wg.Wait()
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("after the blocked ones finished: got %d, want 200", status)
	}
}

func TestNotConnected(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	req, _ := http.NewRequest(http.MethodGet, "http://agent/hello", nil)
	if _, err := e.server.Transport("nobody").RoundTrip(req); !errors.Is(err, ErrAgentNotConnected) {
		t.Errorf("unknown agent: got %v, want ErrAgentNotConnected", err)
	}
	c := e.server.Lookup(testAgent)[0]
	c.Close()
	recv(t, c.Done(), "connection closed")
	if _, err := c.Transport().RoundTrip(req); !errors.Is(err, ErrConnectionGone) {
		t.Errorf("closed connection: got %v, want ErrConnectionGone", err)
	}
}

// A connection older than MaxConnectionAge is replaced: the new one first, then the old one
// drains, and a request in flight on it finishes.
func TestMaxAgeHandover(t *testing.T) {
	e := newEnv(t, envOptions{agent: func(o *AgentOptions) { o.MaxConnectionAge = time.Second }})
	old := e.waitConnected(1)[0]

	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://agent/block?id=long", nil)
		req.Header.Set(PortHeader, itoa(e.upstream.port))
		resp, err := old.Transport().RoundTrip(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b), err}
	}()
	recv(t, e.upstream.arrived, "request in flight on the old connection")

	poll.Until(t, 15*time.Second, "a new connection took over", func() bool {
		c := e.server.Lookup(testAgent)
		return len(c) == 1 && c[0] != old
	})
	select {
	case <-old.Done():
		t.Fatal("old connection closed with a request in flight")
	default:
	}
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("new request during handover: got %d, want 200", status)
	}
	close(e.upstream.release)
	r := recv(t, done, "request in flight")
	if r.err != nil || r.status != http.StatusOK || r.body != "first part;second part" {
		t.Errorf("in-flight request: got %d %q %v, want 200 and the whole body", r.status, r.body, r.err)
	}
	recv(t, old.Done(), "old connection closed once idle")
}

// Drain asks agents to go elsewhere; requests in flight finish first.
func TestServerDrain(t *testing.T) {
	var mu sync.Mutex
	disconnected := 0
	e := newEnv(t, envOptions{server: func(o *ServerOptions) {
		o.OnDisconnect = func(*Conn) { mu.Lock(); disconnected++; mu.Unlock() }
	}})
	c := e.waitConnected(1)[0]
	done := make(chan int, 1)
	go func() {
		status, _, _ := fetch(e.url("/block?id=d1"), nil)
		done <- status
	}()
	recv(t, e.upstream.arrived, "request in flight")

	drained := make(chan error, 1)
	go func() { drained <- e.server.Drain(context.Background()) }()
	poll.Until(t, 15*time.Second, "connection stops taking requests", func() bool { return len(e.server.Lookup(testAgent)) == 0 })
	mu.Lock()
	if disconnected != 1 {
		t.Errorf("OnDisconnect calls: got %d, want 1", disconnected)
	}
	mu.Unlock()
	// The agent was told to reconnect; this edge refuses it while it drains.
	poll.Until(t, 15*time.Second, "agent tried again and got 503", func() bool {
		var se *StatusError
		return errors.As(e.agent.Status().LastError, &se) && se.StatusCode == http.StatusServiceUnavailable
	})

	close(e.upstream.release)
	if status := recv(t, done, "request in flight"); status != http.StatusOK {
		t.Errorf("in-flight request: got %d, want 200", status)
	}
	if err := recv(t, drained, "Drain"); err != nil {
		t.Errorf("Drain: got %v, want nil", err)
	}
	recv(t, c.Done(), "connection closed")
}

func TestServerDrainDeadline(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.waitConnected(1)[0]
	go fetch(e.url("/hang?id=x"), nil)
	recv(t, e.upstream.arrived, "request in flight")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.server.Drain(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain: got %v, want context.Canceled", err)
	}
	recv(t, c.Done(), "connection closed at the deadline")
	recv(t, e.upstream.aborted, "upstream request cancelled")
}

// Run returns once its context ends, after its connections drained.
func TestAgentStops(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.waitConnected(1)[0]
	e.stop()
	recv(t, e.stopped, "Run to return")
	recv(t, c.Done(), "connection closed")
	if got := e.agent.Status().Connected; got != 0 {
		t.Errorf("connected after stop: got %d, want 0", got)
	}
}

func TestSeveralConnections(t *testing.T) {
	e := newEnv(t, envOptions{agent: func(o *AgentOptions) { o.Connections = 3 }})
	conns := e.waitConnected(3)
	for range 6 {
		if status, _ := get(t, e.url("/hello"), nil); status != http.StatusOK {
			t.Fatalf("status: got %d, want 200", status)
		}
	}
	conns[0].Close()
	poll.Until(t, 15*time.Second, "the closed connection replaced", func() bool {
		for _, c := range e.server.Lookup(testAgent) {
			if c == conns[0] {
				return false
			}
		}
		return len(e.server.Lookup(testAgent)) == 3
	})
}
