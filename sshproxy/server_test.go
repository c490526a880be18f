package sshproxy

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/crypto/ssh"
)

func signer(t *testing.T) ssh.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// workspace is a Go SSH server standing in for a workspace's sshd: it accepts edge's client key
// for user "gitlab-workspaces", answers "exec" with the command echoed and exit status 3.
type workspace struct {
	addr    string
	hostKey ssh.Signer
}

func startWorkspace(t *testing.T, trusted ssh.PublicKey) *workspace {
	t.Helper()
	w := &workspace{hostKey: signer(t)}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if meta.User() == "gitlab-workspaces" && bytes.Equal(key.Marshal(), trusted.Marshal()) {
			return &ssh.Permissions{}, nil
		}
		return nil, errors.New("not trusted")
	}}
	cfg.AddHostKey(w.hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	w.addr = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go w.serve(c, cfg)
		}
	}()
	return w
}

func (w *workspace) serve(c net.Conn, cfg *ssh.ServerConfig) {
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		c.Close()
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer ch.Close()
			for r := range creqs {
				if r.Type != "exec" {
					r.Reply(false, nil)
					continue
				}
				r.Reply(true, nil)
				var cmd struct{ Command string }
				ssh.Unmarshal(r.Payload, &cmd)
				ch.Write([]byte("ran " + cmd.Command))
				ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{3}))
				return
			}
		}()
	}
}

// rig is an sshproxy Server in front of one workspace, with an authorizer the test sets.
type rig struct {
	addr    string
	srv     *Server
	ws      *workspace
	calls   atomic.Int32
	mu      sync.Mutex
	allowed bool
	hostKey ssh.PublicKey
	crash   atomic.Bool // the authorizer panics while set
}

func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	client := signer(t)
	r := &rig{ws: startWorkspace(t, client.PublicKey()), allowed: true}
	r.hostKey = r.ws.hostKey.PublicKey()
	o.HostKey, o.ClientKey = signer(t), client
	o.Authorize = func(_ context.Context, token, ws string) (Target, error) {
		r.calls.Add(1)
		if r.crash.Load() {
			panic("test: the authorizer crashed")
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case ws != "ws-alice":
			return Target{}, ErrNotFound
		case token != "glpat-alice" || !r.allowed:
			return Target{}, ErrDenied
		}
		return Target{User: "alice", AgentID: "a1", Port: 60022, UpstreamUser: "gitlab-workspaces", HostKey: r.hostKey}, nil
	}
	o.Dial = func(ctx context.Context, agentID string, port int) (net.Conn, error) {
		if agentID != "a1" || port != 60022 {
			return nil, errors.New("wrong target")
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", r.ws.addr)
	}
	if o.FailDelay == 0 {
		o.FailDelay = 100 * time.Millisecond
	}
	var err error
	if r.srv, err = New(o); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	go r.srv.Serve(ln)
	t.Cleanup(func() {
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r.srv.Shutdown(ctx)
	})
	return r
}

func (r *rig) dial(user, password string, ciphers ...string) (*ssh.Client, error) {
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.Password(password)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 5 * time.Second}
	cfg.Ciphers = ciphers
	return ssh.Dial("tcp", r.addr, cfg)
}

func TestExecThroughTheProxy(t *testing.T) {
	r := newRig(t, Options{})
	c, err := r.dial("ws-alice", "glpat-alice")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Output("hostname")
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Errorf("exit: %v, want status 3 from the workspace", err)
	}
	if string(out) != "ran hostname" {
		t.Errorf("output %q, want the workspace's", out)
	}
}

// TestRefusalsLookAlike: a wrong token and an unknown workspace are refused after the same delay.
func TestRefusalsLookAlike(t *testing.T) {
	r := newRig(t, Options{FailDelay: 300 * time.Millisecond, MaxFailures: 100})
	for _, tt := range []struct{ user, password string }{{"ws-alice", "glpat-wrong"}, {"ws-nobody", "glpat-alice"}} {
		start := time.Now()
		if _, err := r.dial(tt.user, tt.password); err == nil {
			t.Fatalf("%s/%s: logged in", tt.user, tt.password)
		}
		// MaxAuthTries 3: a client may try its password more than once, each answered after the delay.
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Errorf("%s: refused after %v, want at least the fail delay", tt.user, d)
		}
	}
}

// TestRateLimited: past MaxFailures from one source, logins are refused without asking.
func TestRateLimited(t *testing.T) {
	r := newRig(t, Options{MaxFailures: 2, FailDelay: time.Millisecond})
	for range 3 {
		r.dial("ws-alice", "glpat-wrong")
	}
	before := r.calls.Load()
	if _, err := r.dial("ws-alice", "glpat-alice"); err == nil {
		t.Error("a right token got through past the limit")
	}
	if r.calls.Load() != before {
		t.Errorf("the authorizer was asked %d more times past the limit", r.calls.Load()-before)
	}
}

// TestUpstreamHostKeyChecked: a workspace whose sshd shows another host key than the
// authorizer's is never reached.
func TestUpstreamHostKeyChecked(t *testing.T) {
	r := newRig(t, Options{})
	r.mu.Lock()
	r.hostKey = signer(t).PublicKey()
	r.mu.Unlock()
	if c, err := r.dial("ws-alice", "glpat-alice"); err == nil {
		s, err := c.NewSession()
		if err == nil {
			out, _ := s.Output("hostname")
			t.Errorf("a session ran through an unverified sshd: %q", out)
		}
		c.Close()
	}
	var m dto.Metric
	deadline := time.Now().Add(5 * time.Second)
	for m.GetCounter().GetValue() != 1 && time.Now().Before(deadline) {
		r.srv.m.logins.WithLabelValues("host_key_mismatch").Write(&m)
		time.Sleep(10 * time.Millisecond)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Errorf("host_key_mismatch counted %v, want 1", got)
	}
}

// TestRevocationClosesTheSession: a recheck that denies closes the open connection with a message.
func TestRevocationClosesTheSession(t *testing.T) {
	r := newRig(t, Options{Recheck: 100 * time.Millisecond})
	c, err := r.dial("ws-alice", "glpat-alice")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r.mu.Lock()
	r.allowed = false
	r.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection is still open after access was revoked")
	}
}

// TestOnlyAESGCM: a client offering only chacha20-poly1305 is refused; AES-GCM is what users get.
func TestOnlyAESGCM(t *testing.T) {
	r := newRig(t, Options{})
	if _, err := r.dial("ws-alice", "glpat-alice", "chacha20-poly1305@openssh.com"); err == nil || !strings.Contains(err.Error(), "no common algorithm") {
		t.Errorf("chacha20-only client: %v, want no common algorithm", err)
	}
	c, err := r.dial("ws-alice", "glpat-alice", "aes256-gcm@openssh.com")
	if err != nil {
		t.Fatalf("aes256-gcm client: %v", err)
	}
	c.Close()
}

// TestShutdownClosesSessionsAfterGrace: Shutdown waits for open sessions until its context ends,
// then closes them.
func TestShutdownClosesSessionsAfterGrace(t *testing.T) {
	r := newRig(t, Options{})
	c, err := r.dial("ws-alice", "glpat-alice")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The grace is counted from before the context's deadline is set, so that it cannot be
	// measured shorter than it is.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r.srv.Shutdown(ctx)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("Shutdown returned after %v, before its grace", d)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the session is still open after Shutdown")
	}
}
