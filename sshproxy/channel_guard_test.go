package sshproxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/ssh"

	"gitlab.com/edge/edge/internal/guard"
)

// crashingConn is a connection to the workspace with a bug (a tunnel stream's, say): once armed,
// its next write panics before taking any byte. The SSH packet stays in x/crypto's buffer and goes
// out with the next one, its AES-GCM nonce already advanced, so the connection stays whole and
// what the test sees is edge's containment, not a broken transport.
type crashingConn struct {
	net.Conn
	armed *atomic.Bool
}

func (c crashingConn) Write(b []byte) (int, error) {
	if c.armed.CompareAndSwap(true, false) {
		panic("test: the connection to the workspace crashed")
	}
	return c.Conn.Write(b)
}

// TestChannelPanicRefusesTheChannel: a panic opening a user's channel on the workspace's sshd
// refuses that channel, is counted as ssh_channel, and the session goes on: a channel open
// before it still runs, and a new one opens.
func TestChannelPanicRefusesTheChannel(t *testing.T) {
	g, err := guard.New(slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, Options{Guard: g})
	var armed atomic.Bool
	// Under the server's lock: the login reads the options after taking it.
	r.srv.mu.Lock()
	dial := r.srv.o.Dial
	r.srv.o.Dial = func(ctx context.Context, agentID string, port int) (net.Conn, error) {
		c, err := dial(ctx, agentID, port)
		if err != nil {
			return nil, err
		}
		return crashingConn{Conn: c, armed: &armed}, nil
	}
	r.srv.mu.Unlock()

	c, err := r.dial("ws-alice", "glpat-alice")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}

	// Nothing else writes to the workspace now: the next write is the one opening this channel.
	armed.Store(true)
	opened := make(chan error, 1)
	go func() { _, _, err := c.OpenChannel("session", nil); opened <- err }()
	select {
	case err = <-opened:
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to a channel whose opening crashed")
	}
	var refused *ssh.OpenChannelError
	if !errors.As(err, &refused) || refused.Reason != ssh.ConnectionFailed {
		t.Errorf("a channel whose opening crashed: %v, want refused with ConnectionFailed", err)
	}
	if armed.Load() {
		t.Error("the channel was refused without its opening crashing")
	}
	if got := g.Contained("ssh_channel"); got != 1 {
		t.Errorf("edge_panics_total{where=ssh_channel}: got %v, want 1", got)
	}

	run := func(name string, s *ssh.Session) {
		t.Helper()
		out, err := s.Output("hostname")
		var exit *ssh.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != 3 || string(out) != "ran hostname" {
			t.Errorf("%s: %q, %v; want the workspace's answer", name, out, err)
		}
	}
	run("the channel open before the crash", before)
	after, err := c.NewSession()
	if err != nil {
		t.Fatalf("a channel after the crash: %v", err)
	}
	run("a channel after the crash", after)
	if got := testutil.ToFloat64(r.srv.m.open); got != 1 {
		t.Errorf("sessions open: got %v, want 1 (the session goes on)", got)
	}
	if got := g.Contained("ssh_channel"); got != 1 {
		t.Errorf("edge_panics_total{where=ssh_channel} at the end: got %v, want 1", got)
	}
}
