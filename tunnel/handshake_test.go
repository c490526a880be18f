package tunnel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// rawConn is a client that sends the connect request and then does only what the test says.
type rawConn struct {
	net.Conn
	resp *http.Response
	body string // the refusal's body
}

// rawUpgrade sends the connect request for agentID on a fresh connection and reads the answer.
func rawUpgrade(t *testing.T, edgeURL, agentID string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(edgeURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, "GET "+ConnectPath+" HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer good-"+agentID+
		"\r\nConnection: Upgrade\r\nUpgrade: "+UpgradeToken+"\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rawConn{Conn: conn, resp: resp}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		rc.body = string(b)
	}
	return rc
}

// closedWithin tells whether the edge closes c within d.
func (c *rawConn) closedWithin(d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// connects reads edge_tunnel_connects_total{result}.
func connects(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "edge_tunnel_connects_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Upgrades that never speak the tunnel protocol are not connections: not listed, not reported,
// given no request, and closed at the deadline, while the real agent's requests all succeed.
func TestSilentUpgradesNeverTakeRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	var onConnect atomic.Int32
	e := newEnv(t, envOptions{server: func(o *ServerOptions) {
		o.HandshakeTimeout = 500 * time.Millisecond
		o.Metrics = reg
		o.OnConnect = func(*Conn) { onConnect.Add(1) }
	}})
	real := e.waitConnected(1)[0]

	var silent []*rawConn
	for range 3 {
		silent = append(silent, rawUpgrade(t, e.edge.URL, testAgent)) // same agent id, never speaks
	}
	// One speaks yamux but never opens the control stream: no handshake either.
	muxOnly := rawUpgrade(t, e.edge.URL, testAgent)
	sess, err := yamux.Client(muxOnly, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	other := rawUpgrade(t, e.edge.URL, "silent")
	for _, c := range append(silent, muxOnly, other) {
		if c.resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: got %d, want 101", c.resp.StatusCode)
		}
	}

	if got := e.server.Lookup(testAgent); len(got) != 1 || got[0] != real {
		t.Errorf("Lookup: got %d connection(s), want only the agent's own", len(got))
	}
	if e.server.Connected("silent") || len(e.server.Conns()) != 1 {
		t.Errorf("an agent whose only connection never did its handshake is connected")
	}
	req, _ := http.NewRequest(http.MethodGet, "http://agent/hello", nil)
	req.Header.Set(PortHeader, "1")
	if _, err := e.server.Transport("silent").RoundTrip(req); !errors.Is(err, ErrAgentNotConnected) {
		t.Errorf("request for the silent agent: got %v, want ErrAgentNotConnected", err)
	}
	for i := range 20 {
		if status, body := get(t, e.url("/hello"), nil); status != http.StatusOK {
			t.Fatalf("request %d with silent upgrades pending: got %d %q, want 200", i, status, body)
		}
	}
	if n := onConnect.Load(); n != 1 {
		t.Errorf("OnConnect: called %d times, want once (the agent)", n)
	}

	for _, c := range append(silent, muxOnly, other) {
		if !c.closedWithin(3 * time.Second) {
			t.Errorf("a connection without a handshake is still open after the deadline")
		}
	}
	poll.UntilState(t, 15*time.Second, "5 handshake timeouts counted", func() (bool, string) {
		n := connects(t, reg, "handshake_timeout")
		return n == 5, fmt.Sprintf("%v counted", n)
	})
	if ok := connects(t, reg, "ok"); ok != 1 {
		t.Errorf("ok connects: got %v, want 1", ok)
	}
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("after the deadline: got %d, want 200", status)
	}
}

// At most MaxConnectionsPerAgent connections per agent id, pending ones included; the rest get
// 429 before any upgrade, and a place frees when a connection goes.
func TestConnectionCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, envOptions{server: func(o *ServerOptions) {
		o.MaxConnectionsPerAgent = 2
		o.HandshakeTimeout = 10 * time.Second
		o.Metrics = reg
	}})
	real := e.waitConnected(1)[0]

	pending := rawUpgrade(t, e.edge.URL, testAgent)
	if pending.resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("second connection: got %d, want 101", pending.resp.StatusCode)
	}
	refused := rawUpgrade(t, e.edge.URL, testAgent)
	if refused.resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third connection: got %d, want 429", refused.resp.StatusCode)
	}
	if ra := refused.resp.Header.Get("Retry-After"); ra != "10" {
		t.Errorf("Retry-After: got %q, want the handshake timeout, 10", ra)
	}
	var body struct{ Error, Message string }
	if json.Unmarshal([]byte(refused.body), &body) != nil || body.Error != "too_many_connections" || !strings.Contains(body.Message, "2 connections") {
		t.Errorf("refusal body: got %s, want too_many_connections naming the cap", refused.body)
	}
	if n := connects(t, reg, "too_many_connections"); n != 1 {
		t.Errorf("too_many_connections: got %v, want 1", n)
	}
	if b := rawUpgrade(t, e.edge.URL, "b"); b.resp.StatusCode != http.StatusSwitchingProtocols {
		t.Errorf("another agent id: got %d, want 101 (the cap is per agent)", b.resp.StatusCode)
	}
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("the agent at its cap: got %d, want 200", status)
	}

	// The pending one goes: its place is free.
	pending.Close()
	poll.Until(t, 15*time.Second, "a place freed by a pending connection that went", func() bool {
		c := rawUpgrade(t, e.edge.URL, testAgent)
		defer c.Close()
		return c.resp.StatusCode == http.StatusSwitchingProtocols
	})

	// The real one goes: the agent connects again under the cap and serves.
	real.Close()
	poll.Until(t, 15*time.Second, "the agent connected again", func() bool {
		c := e.server.Lookup(testAgent)
		return len(c) == 1 && c[0] != real
	})
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("after reconnecting: got %d, want 200", status)
	}

	// A lower cap applies to the next connect.
	e.server.SetMaxConnectionsPerAgent(1)
	if c := rawUpgrade(t, e.edge.URL, testAgent); c.resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("after lowering the cap to 1: got %d, want 429", c.resp.StatusCode)
	}
	if status, _ := get(t, e.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("the held connection after lowering the cap: got %d, want 200", status)
	}
}

// Close ends connections still in their handshake at once.
func TestCloseEndsPendingHandshakes(t *testing.T) {
	e := newEnv(t, envOptions{server: func(o *ServerOptions) { o.HandshakeTimeout = time.Minute }})
	e.waitConnected(1)
	c := rawUpgrade(t, e.edge.URL, testAgent)
	if c.resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: got %d, want 101", c.resp.StatusCode)
	}
	done := make(chan struct{})
	go func() {
		e.server.Close()
		close(done)
	}()
	recv(t, done, "Close returns")
	if !c.closedWithin(2 * time.Second) {
		t.Errorf("a pending connection is still open after Close")
	}
}
