package sshproxy

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/ssh"

	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestSessionPanicEndsTheSession: a panic at login ends that connection, and one in a session's
// goroutine (the recheck asks a crashing authorizer) ends that session (both connections);
// each is counted as ssh_session, and the server goes on serving logins.
func TestSessionPanicEndsTheSession(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := guard.New(slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, Options{Recheck: 100 * time.Millisecond, Guard: g})

	r.crash.Store(true)
	if c, err := r.dial("ws-alice", "glpat-alice"); err == nil {
		c.Close()
		t.Fatal("logged in through a crashing authorizer")
	}
	poll.Until(t, 5*time.Second, "the login's panic counted", func() bool { return g.Contained("ssh_session") == 1 })

	r.crash.Store(false)
	c, err := r.dial("ws-alice", "glpat-alice")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.NewSession(); err != nil {
		t.Fatal(err)
	}
	r.crash.Store(true) // the next recheck crashes
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the session is still open after its recheck crashed")
	}
	poll.Until(t, 5*time.Second, "the session's panic counted", func() bool { return g.Contained("ssh_session") == 2 })
	poll.Until(t, 5*time.Second, "no session open", func() bool { return testutil.ToFloat64(r.srv.m.open) == 0 })

	r.crash.Store(false)
	c2, err := r.dial("ws-alice", "glpat-alice")
	if err != nil {
		t.Fatalf("a login after the crashes: %v", err)
	}
	defer c2.Close()
	s2, err := c2.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := s2.Output("hostname")
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || string(out) != "ran hostname" {
		t.Errorf("after the crashes: %q, %v; want the workspace's answer", out, err)
	}
	if got := g.Contained("ssh_session"); got != 2 {
		t.Errorf("edge_panics_total{where=ssh_session}: got %v, want 2", got)
	}
}
