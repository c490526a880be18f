// Package sshproxy is the SSH front of workspaces: users log in with the workspace's name as the
// user and a personal access token as the password; after the authorizer allows it, edge opens its
// own SSH client connection to the workspace's sshd (through the agent's tunnel, with edge's key,
// verifying the host key the authorizer gave) and bridges everything both ways. It is a leaf: the
// authorizer and the dialer are functions it is given.
package sshproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/ssh"

	"gitlab.com/edge/edge/internal/guard"
)

// Target is where an allowed login goes.
type Target struct {
	User         string // who logged in, for logs
	AgentID      string
	Port         int
	UpstreamUser string
	HostKey      ssh.PublicKey
}

// Options configure a Server.
type Options struct {
	HostKey   ssh.Signer // edge's own host key
	ClientKey ssh.Signer // what edge logs in to workspaces' sshd with
	Authorize func(ctx context.Context, token, workspace string) (Target, error)
	Dial      func(ctx context.Context, agentID string, port int) (net.Conn, error)
	Recheck   time.Duration // authorization is asked again this often (default 30 s)
	// FailDelay: every refused login is answered this long after it began, whether the workspace
	// exists or not (default 1 s).
	FailDelay time.Duration
	// MaxFailures per source address and per workspace within FailWindow, then refusals without
	// asking (default 10 per minute).
	MaxFailures int
	FailWindow  time.Duration
	// AgentForwarding and RemoteForwarding are off unless set.
	AgentForwarding, RemoteForwarding bool
	Log                               *slog.Logger
	Registerer                        prometheus.Registerer
	// Guard contains the panics of the sessions' goroutines (nil: contained, logged to standard
	// error, not counted): a panic ends that session, or that channel.
	Guard *guard.Guard
}

// Server accepts SSH connections for workspaces.
type Server struct {
	o       Options
	config  *ssh.ServerConfig
	log     *slog.Logger
	m       *metrics
	limits  *failures
	mu      sync.Mutex
	pending map[string]pendingLogin // by session id: the target of a login, until the handshake ends
	conns   map[*session]struct{}
	closing bool
	wg      sync.WaitGroup
}

type pendingLogin struct {
	target Target
	token  string
}

// New checks the options.
func New(o Options) (*Server, error) {
	if o.HostKey == nil || o.ClientKey == nil || o.Authorize == nil || o.Dial == nil {
		return nil, errors.New("sshproxy: HostKey, ClientKey, Authorize and Dial are required")
	}
	if o.Recheck <= 0 {
		o.Recheck = 30 * time.Second
	}
	if o.FailDelay <= 0 {
		o.FailDelay = time.Second
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 10
	}
	if o.FailWindow <= 0 {
		o.FailWindow = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, log: o.Log, m: m, limits: newFailures(o.MaxFailures, o.FailWindow),
		pending: map[string]pendingLogin{}, conns: map[*session]struct{}{}}
	s.config = &ssh.ServerConfig{PasswordCallback: s.password, MaxAuthTries: 3, ServerVersion: "SSH-2.0-edge"}
	// AES-GCM only between users and edge: a client picks its first cipher the server offers, and
	// OpenSSH puts chacha20-poly1305 first, which x/crypto runs without assembly on amd64 (28% of
	// edge's CPU in an scp); every OpenSSH since 6.2 speaks AES-GCM (bench/cmd/sshbench).
	s.config.Ciphers = []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"}
	s.config.AddHostKey(o.HostKey)
	return s, nil
}

// password checks a login: the SSH user is the workspace, the password a personal access token.
// Every refusal is answered FailDelay after the attempt began, so timing does not tell whether a
// workspace exists; the token is never logged.
func (s *Server) password(meta ssh.ConnMetadata, password []byte) (*ssh.Permissions, error) {
	start := time.Now()
	workspace := meta.User()
	source := hostOf(meta.RemoteAddr())
	refuse := func(outcome string, err error) (*ssh.Permissions, error) {
		s.m.logins.WithLabelValues(outcome).Inc()
		s.limits.fail(source, workspace)
		s.log.Info("ssh login refused", "workspace", workspace, "remote", meta.RemoteAddr().String(), "outcome", outcome)
		time.Sleep(time.Until(start.Add(s.o.FailDelay)))
		return nil, err
	}
	if !s.limits.allow(source, workspace) {
		return refuse("rate_limited", errors.New("too many attempts"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	t, err := s.o.Authorize(ctx, string(password), workspace)
	switch {
	case errors.Is(err, ErrNotFound):
		return refuse("unknown_workspace", ErrDenied)
	case errors.Is(err, ErrDenied):
		return refuse("denied", ErrDenied)
	case err != nil:
		s.log.Warn("ssh authorization unavailable; refused", "workspace", workspace, "error", err)
		return refuse("error", ErrDenied)
	}
	s.mu.Lock()
	s.pending[string(meta.SessionID())] = pendingLogin{target: t, token: string(password)}
	s.mu.Unlock()
	return &ssh.Permissions{}, nil
}

// Serve accepts connections on ln until it is closed.
func (s *Server) Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.Close()
			continue
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.o.Guard.Recover("ssh_session", nil)
			defer s.wg.Done()
			defer c.Close() // after a panic too (closed already otherwise)
			s.serveConn(c)
		}()
	}
}

// Shutdown lets open sessions finish until ctx ends, then closes them. Stop accepting first by
// closing the listener.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }() // guard: only waits and closes
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.close("shutdown", "edge is shutting down", nil)
	}
	s.mu.Unlock()
	<-done
}

func (s *Server) serveConn(c net.Conn) {
	c.SetDeadline(time.Now().Add(30 * time.Second)) // the handshake and login
	conn, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		s.log.Info("ssh connection ended before login", "remote", c.RemoteAddr().String(), "error", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	id := string(conn.SessionID())
	s.mu.Lock()
	login, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if !ok {
		conn.Close()
		return
	}
	sess, err := s.connectUpstream(conn, login)
	if err != nil {
		conn.Close()
		return
	}
	s.mu.Lock()
	s.conns[sess] = struct{}{}
	s.mu.Unlock()
	s.m.logins.WithLabelValues("ok").Inc()
	s.m.open.Inc()
	start := time.Now()
	// Deferred, so that a panic ends the session as its end does: both connections closed. (After
	// run, the session is closed already: only a panic here closes it.)
	defer func() {
		sess.close("panic", "", nil)
		s.m.open.Dec()
		s.mu.Lock()
		delete(s.conns, sess)
		s.mu.Unlock()
		attrs := []any{"workspace", conn.User(), "user", login.target.User, "remote", conn.RemoteAddr().String(),
			"duration", time.Since(start).Round(time.Millisecond), "ended_by", sess.endedBy}
		if sess.endErr != nil {
			attrs = append(attrs, "error", sess.endErr)
		}
		s.log.Info("ssh session ended", attrs...)
	}()
	s.log.Info("ssh login", "workspace", conn.User(), "user", login.target.User, "remote", conn.RemoteAddr().String())
	sess.run(chans, reqs)
}

// connectUpstream opens edge's own SSH connection to the workspace's sshd through the agent,
// verifying the host key the authorizer gave: a different one is an alarm, never trusted.
func (s *Server) connectUpstream(client *ssh.ServerConn, login pendingLogin) (*session, error) {
	t := login.target
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := s.o.Dial(ctx, t.AgentID, t.Port)
	if err != nil {
		s.m.logins.WithLabelValues("upstream_unreachable").Inc()
		s.log.Warn("ssh: the workspace's sshd cannot be reached", "workspace", client.User(), "agent_id", t.AgentID, "error", err)
		return nil, err
	}
	var mismatch error
	cfg := &ssh.ClientConfig{
		User: t.UpstreamUser,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(s.o.ClientKey)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if err := ssh.FixedHostKey(t.HostKey)(client.User(), nil, key); err != nil {
				mismatch = fmt.Errorf("host key %s, want %s", ssh.FingerprintSHA256(key), ssh.FingerprintSHA256(t.HostKey))
				return mismatch
			}
			return nil
		},
		Timeout: 30 * time.Second,
	}
	raw.SetDeadline(time.Now().Add(30 * time.Second))
	uc, uchans, ureqs, err := ssh.NewClientConn(raw, fmt.Sprintf("%s:%d", client.User(), t.Port), cfg)
	if err != nil {
		raw.Close()
		if mismatch != nil {
			s.m.logins.WithLabelValues("host_key_mismatch").Inc()
			s.log.Error("ALARM: the workspace's sshd presented another host key than the authorizer's; refused",
				"workspace", client.User(), "agent_id", t.AgentID, "error", mismatch)
		} else {
			s.m.logins.WithLabelValues("upstream_error").Inc()
			s.log.Warn("ssh: login to the workspace's sshd failed", "workspace", client.User(), "error", err)
		}
		return nil, err
	}
	raw.SetDeadline(time.Time{})
	return &session{s: s, client: client, upstream: uc, uchans: uchans, ureqs: ureqs, login: login,
		closed: make(chan struct{})}, nil
}

func hostOf(a net.Addr) string {
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}
