package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

// Identity is who a verified agent token names. AgentID is never taken from anything else.
type Identity struct {
	AgentID   string
	ProjectID string
}

// ServerOptions configure the edge side. Only Verify is required.
type ServerOptions struct {
	// Verify checks an agent token (the caller's verifier: aud edge-agent, pinned keys). Any error
	// answers 401; the error is logged, the token never is.
	Verify func(ctx context.Context, token string) (Identity, error)
	// OnConnect is called once a connection is up (its handshake done), before it takes requests; OnDisconnect once it
	// stops taking new ones (the agent or this edge drains it, or it broke), while requests in
	// flight may still finish on it. Each is called once per connection, OnConnect first, and
	// synchronously: keep them short (no network I/O under a lock the request path takes).
	OnConnect    func(*Conn)
	OnDisconnect func(*Conn)
	// MaxStreamsPerAgent bounds requests in flight per agent, over all its connections; beyond it
	// RoundTrip fails with ErrTooManyStreams. 0 means DefaultMaxStreamsPerAgent, negative no bound.
	MaxStreamsPerAgent int
	// HandshakeTimeout bounds the tunnel handshake: the time from the 101 answer until the agent
	// opens its control stream (step 4 of the wire protocol, the first thing an agent does on the
	// session). Until then the connection is pending: not in the table, not reported to OnConnect,
	// given no request; one that misses the deadline is closed and counted as a failed connect
	// (result handshake_timeout). 0 means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// MaxConnectionsPerAgent bounds one agent id's connections at this edge, pending and draining
	// ones included; a connect beyond it is refused with 429 before the upgrade (result
	// too_many_connections). 0 means DefaultMaxConnectionsPerAgent, negative no bound;
	// SetMaxConnectionsPerAgent changes it for later connects.
	MaxConnectionsPerAgent int
	// MaxIdleStreams is how many idle streams per connection are kept for reuse (default
	// DefaultMaxIdleStreams); with the window, it bounds what idle streams may hold.
	MaxIdleStreams int
	// StreamWindow is the yamux receive window per stream (default DefaultStreamWindow).
	StreamWindow uint32
	// KeepAlive is the yamux ping interval (default DefaultKeepAlive).
	KeepAlive time.Duration
	// WriteError answers a refused connect: the edge's one error writer. Required.
	WriteError ErrorWriter
	// RemoveEdgeHeaders takes the edge's own headers off a request sent over a splice stream,
	// where no agent removes them any more: the edge's header rule (nil: every header whose
	// name starts with "edge-" in any case, '_' read as '-').
	RemoveEdgeHeaders func(http.Header)
	// WrapTransport, when set, takes each connection's stream transport and returns what carries
	// requests to the agent instead (edge passes its inline transport); nil uses it as it is.
	WrapTransport func(*http.Transport) RoundTripCloser
	Logger        *slog.Logger
	Metrics       prometheus.Registerer // nil: metrics are not registered
	// Guard contains the panics of the goroutines a connection runs (nil: contained, logged to
	// standard error, not counted): a panic in one ends that connection.
	Guard *guard.Guard

	// spliceReap and heldIdleTimeout: tests shorten them (0: the constants).
	spliceReap, heldIdleTimeout time.Duration
}

// RoundTripCloser is a transport whose idle connections can be closed.
type RoundTripCloser interface {
	http.RoundTripper
	CloseIdleConnections()
}

// Server is the edge side: ServeHTTP accepts agents at ConnectPath; Transport reaches them.
type Server struct {
	opts    ServerOptions
	log     *slog.Logger
	metrics *serverMetrics
	yamux   *yamux.Config
	buffers BufferPool // bulk buffers of request bodies written to streams

	mu          sync.Mutex
	closing     bool
	maxConns    int                    // per agent id; <= 0: no bound
	agents      map[string]*agentEntry // by agent id, while the agent has a live or pending connection
	live        map[*Conn]struct{}     // every connection whose session is open, draining or not
	handshaking map[*Conn]struct{}     // upgraded, waiting for the agent's control stream
	wg          sync.WaitGroup
}

// agentEntry is one agent's connections that take requests, and its requests in flight.
type agentEntry struct {
	conns    []*Conn // not draining
	live     int     // connections with an open session, draining or not
	pending  int     // connections admitted under the cap and not yet through their handshake
	next     int     // round robin
	inflight int
}

// NewServer checks the options and fills in defaults.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Verify == nil {
		return nil, errors.New("tunnel: ServerOptions.Verify is required")
	}
	if opts.WriteError == nil {
		return nil, errors.New("tunnel: ServerOptions.WriteError is required")
	}
	if opts.MaxStreamsPerAgent == 0 {
		opts.MaxStreamsPerAgent = DefaultMaxStreamsPerAgent
	}
	if opts.spliceReap <= 0 {
		opts.spliceReap = spliceReap
	}
	if opts.heldIdleTimeout <= 0 {
		opts.heldIdleTimeout = heldIdleTimeout
	}
	if opts.RemoveEdgeHeaders == nil {
		opts.RemoveEdgeHeaders = removeEdgeHeaders
	}
	if opts.MaxIdleStreams <= 0 {
		opts.MaxIdleStreams = DefaultMaxIdleStreams
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if opts.MaxConnectionsPerAgent == 0 {
		opts.MaxConnectionsPerAgent = DefaultMaxConnectionsPerAgent
	}
	cfg, err := muxSettings{&opts.StreamWindow, &opts.KeepAlive, &opts.Logger}.configure()
	if err != nil {
		return nil, err
	}
	m, err := newServerMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	return &Server{
		opts:        opts,
		log:         opts.Logger,
		metrics:     m,
		yamux:       cfg,
		maxConns:    opts.MaxConnectionsPerAgent,
		agents:      make(map[string]*agentEntry),
		live:        make(map[*Conn]struct{}),
		handshaking: make(map[*Conn]struct{}),
	}, nil
}

// SetMaxConnectionsPerAgent changes the cap of ServerOptions.MaxConnectionsPerAgent (same
// meaning of 0 and negative) for connects from now on; connections already held stay.
func (s *Server) SetMaxConnectionsPerAgent(n int) {
	if n == 0 {
		n = DefaultMaxConnectionsPerAgent
	}
	s.mu.Lock()
	s.maxConns = n
	s.mu.Unlock()
}

// ServeHTTP accepts an agent connection (mount it at ConnectPath). The token is verified before
// anything else is read; the session outlives the handler, which returns after the upgrade.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r.Header) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", UpgradeToken)
		s.refuse(w, http.StatusUpgradeRequired, "bad_request", "expected Connection: Upgrade and Upgrade: "+UpgradeToken)
		return
	}
	if s.isClosing() {
		w.Header().Set("Retry-After", "1")
		s.refuse(w, http.StatusServiceUnavailable, "draining", "edge is draining, connect again")
		return
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		s.refuse(w, http.StatusUnauthorized, "unauthorized", "missing bearer token")
		return
	}
	id, err := s.opts.Verify(r.Context(), token)
	if err != nil || id.AgentID == "" {
		s.log.Info("agent token refused", "remote", r.RemoteAddr, "error", err)
		s.refuse(w, http.StatusUnauthorized, "unauthorized", "invalid agent token")
		return
	}
	info, err := parseInfoHeader(r.Header.Get(InfoHeader))
	if err != nil {
		s.refuse(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	c := s.newConn(id, info, r.RemoteAddr)
	if max, ok := s.admit(c); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(s.opts.HandshakeTimeout.Seconds()))))
		s.log.Warn("agent connect refused: too many connections", "agent_id", id.AgentID, "max", max, "remote", r.RemoteAddr)
		s.refuse(w, http.StatusTooManyRequests, "too_many_connections",
			fmt.Sprintf("this agent already holds %d connections to this edge (agents.max_connections)", max))
		return
	}
	netConn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.unadmit(c)
		// HTTP/2 has no Upgrade: the agent speaks HTTP/1.1, so a proxy in between turned it.
		s.refuse(w, http.StatusHTTPVersionNotSupported, "not_upgradable", "connection cannot be upgraded (needs HTTP/1.1 end to end)")
		return
	}
	if err := s.upgrade(netConn, brw, c); err != nil {
		netConn.Close()
		s.unadmit(c)
		s.metrics.connects.WithLabelValues("error").Inc()
		s.log.Warn("agent upgrade failed", "agent_id", id.AgentID, "remote", r.RemoteAddr, "error", err)
		return
	}
	if err := s.handshake(c); err != nil {
		result := "error"
		if errors.Is(err, context.DeadlineExceeded) {
			result = "handshake_timeout"
		}
		s.metrics.connects.WithLabelValues(result).Inc()
		s.log.Warn("agent connection closed before its tunnel handshake", "agent_id", id.AgentID, "remote", r.RemoteAddr,
			"timeout", s.opts.HandshakeTimeout, "error", err)
		return
	}
	s.metrics.connects.WithLabelValues("ok").Inc()
	s.log.Info("agent connected", "agent_id", id.AgentID, "connection_id", c.info.ConnectionID,
		"version", info.Version, "pod", info.PodNamespace+"/"+info.PodName, "remote", r.RemoteAddr)
	s.start(c)
}

// admit counts c toward its agent's cap, as pending, or says the cap (false) when the agent is
// at it. Pending connections count, so upgrades that never speak cannot pile up.
func (s *Server) admit(c *Conn) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.agents[c.info.AgentID]
	if e == nil {
		e = &agentEntry{}
		s.agents[c.info.AgentID] = e
	}
	if s.maxConns > 0 && e.live+e.pending >= s.maxConns {
		return s.maxConns, false
	}
	e.pending++
	c.entry = e
	return s.maxConns, true
}

// unadmit gives back c's place under the cap when it never got through its handshake.
func (s *Server) unadmit(c *Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unadmitLocked(c)
}

func (s *Server) unadmitLocked(c *Conn) {
	delete(s.handshaking, c)
	if c.entry.pending--; c.entry.live+c.entry.pending == 0 && s.agents[c.info.AgentID] == c.entry {
		delete(s.agents, c.info.AgentID)
	}
}

// handshake waits, up to HandshakeTimeout, for the agent to open its control stream on the new
// session. On an error the session is closed and c's place given back.
func (s *Server) handshake(c *Conn) error {
	s.mu.Lock()
	if s.closing {
		s.unadmitLocked(c)
		s.mu.Unlock()
		c.session.Close()
		return ErrServerClosed
	}
	s.handshaking[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.handshakes.Inc()
	defer s.metrics.handshakes.Dec()
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.HandshakeTimeout)
	defer cancel()
	st, err := c.session.AcceptStreamWithContext(ctx)
	if err != nil {
		c.session.Close()
		s.unadmit(c)
		return fmt.Errorf("tunnel: handshake: %w", err)
	}
	c.ctrl = &control{stream: st}
	return nil
}

func (s *Server) refuse(w http.ResponseWriter, status int, result, msg string) {
	s.metrics.connects.WithLabelValues(result).Inc()
	s.opts.WriteError(w, status, result, msg)
}

// ErrorWriter writes an error answer: status, a cause label and a message. The edge passes its
// one error writer, so refusals from here look like every other refusal of the edge.
type ErrorWriter func(w http.ResponseWriter, status int, cause, message string)

func removeEdgeHeaders(h http.Header) {
	for k := range h {
		if len(k) >= 5 && strings.EqualFold(strings.ReplaceAll(k[:5], "_", "-"), "edge-") {
			delete(h, k)
		}
	}
}

func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// start makes c visible and runs it. OnConnect runs first, so that no OnDisconnect can come
// before it.
func (s *Server) start(c *Conn) {
	if s.opts.OnConnect != nil {
		s.opts.OnConnect(c)
	}
	s.mu.Lock()
	if s.closing {
		s.unadmitLocked(c)
		s.mu.Unlock()
		c.session.Close()
		if s.opts.OnDisconnect != nil {
			s.opts.OnDisconnect(c)
		}
		close(c.done)
		return
	}
	e := c.entry
	delete(s.handshaking, c)
	e.pending--
	e.conns = append(e.conns, c)
	e.live++
	s.live[c] = struct{}{}
	s.wg.Add(3)
	s.mu.Unlock()
	s.metrics.connections.Inc()
	g := s.opts.Guard
	go func() { defer g.Recover("tunnel_control", c.crashed); c.serveControl() }()
	go func() { defer g.Recover("tunnel_control", c.crashed); c.receiveControl() }()
	go func() { defer g.Recover("tunnel_control", nil); c.wait() }()
	if c.splice != nil {
		s.wg.Go(func() { defer g.Recover("tunnel_control", c.crashed); c.reapSplices() })
	}
}

// deactivate takes c out of the table of connections that take requests; it reports whether c
// was in it (so OnDisconnect runs once). Called with s.mu held.
func (s *Server) deactivate(c *Conn) bool {
	if c.draining {
		return false
	}
	c.draining = true
	e := c.entry
	for i, x := range e.conns {
		if x == c {
			e.conns = append(e.conns[:i], e.conns[i+1:]...)
			break
		}
	}
	return true
}

func (s *Server) disconnected(c *Conn) {
	s.metrics.connections.Dec()
	s.log.Info("agent connection stops taking requests", "agent_id", c.info.AgentID, "connection_id", c.info.ConnectionID)
	if s.opts.OnDisconnect != nil {
		s.opts.OnDisconnect(c)
	}
}

// forget drops c once its session is closed.
func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	was := s.deactivate(c)
	delete(s.live, c)
	if c.entry.live--; c.entry.live+c.entry.pending == 0 && s.agents[c.info.AgentID] == c.entry {
		delete(s.agents, c.info.AgentID)
	}
	s.mu.Unlock()
	if was {
		s.disconnected(c)
	}
}

// Lookup gives the agent's connections that take requests.
func (s *Server) Lookup(agentID string) []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.agents[agentID]; e != nil {
		return append([]*Conn(nil), e.conns...)
	}
	return nil
}

// Connected reports whether the agent has a connection here that takes requests, without the
// copy Lookup makes: the request path asks it for every request.
func (s *Server) Connected(agentID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.agents[agentID]
	return e != nil && len(e.conns) > 0
}

// Conn gives one connection of the agent by id, or nil if it is not taking requests.
func (s *Server) Conn(agentID, connectionID string) *Conn {
	for _, c := range s.Lookup(agentID) {
		if c.info.ConnectionID == connectionID {
			return c
		}
	}
	return nil
}

// Conns gives every connection that takes requests (for re-registering them all).
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []*Conn
	for _, e := range s.agents {
		all = append(all, e.conns...)
	}
	return all
}

// Drain stops accepting agents, asks every connected agent to connect again (elsewhere), and
// closes each connection once its requests in flight are done. When ctx ends first, the rest are
// closed at once and ctx's error returned.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	conns := make([]*Conn, 0, len(s.live))
	for c := range s.live {
		conns = append(conns, c)
	}
	pending := s.pendingLocked()
	s.mu.Unlock()
	for _, c := range pending {
		c.session.Close() // it never took a request
	}
	for _, c := range conns {
		go func() {
			defer s.opts.Guard.Recover("tunnel_control", c.crashed)
			c.sendDrain()
			c.retire()
		}()
	}
	for _, c := range conns {
		select {
		case <-c.done:
		case <-ctx.Done():
			s.Close()
			return fmt.Errorf("tunnel: drain: %w", ctx.Err())
		}
	}
	s.wg.Wait()
	return nil
}

// Close stops accepting agents and closes every connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	conns := make([]*Conn, 0, len(s.live))
	for c := range s.live {
		conns = append(conns, c)
	}
	conns = append(conns, s.pendingLocked()...)
	s.mu.Unlock()
	for _, c := range conns {
		c.session.Close()
	}
	s.wg.Wait()
	return nil
}

func (s *Server) pendingLocked() []*Conn {
	out := make([]*Conn, 0, len(s.handshaking))
	for c := range s.handshaking {
		out = append(out, c)
	}
	return out
}
