package tunnel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// A splice stream is a stream the edge opens with an edge-splice upgrade naming a port: the agent
// checks the port, dials the upstream and answers 101, then copies bytes both ways until either
// side closes. The edge uses it as a keep-alive TCP connection to that upstream, so a request
// through the tunnel is parsed once, by the edge, instead of once more by the agent.

const (
	// spliceSmallBuffer is what each direction of a splice reads into while the stream is quiet
	// or carries small messages; see pipe.
	spliceSmallBuffer = 16 << 10
	// spliceQuiet is how long a held splice stream of a draining connection must have been quiet,
	// its last bytes an answer from the agent, before the edge takes it for idle and closes it.
	spliceQuiet = time.Second
	// spliceSweep is how often a draining connection looks for quiet held splice streams.
	spliceSweep = 250 * time.Millisecond
	// spliceReap is how often a connection closes its idle splice streams, and heldIdleTimeout
	// how long a held one may stay quiet after an answer. An idle splice stream holds a
	// connection to the upstream at the agent: unlike an idle request stream, it must not stay
	// open for as long as nobody sends a request.
	spliceReap      = 90 * time.Second
	heldIdleTimeout = 10 * time.Minute
)

// Relay copies bytes both ways between a and b until either way ends, then closes both; first
// it sends b what a had already buffered (bytes read past an upgrade request). It returns when
// both ways have ended. A panic in either way closes both (the other way ends too); the way
// Relay starts runs under g ("splice_relay"), the caller's way under the caller's guard.
func Relay(a, b net.Conn, buffered []byte, pool *BufferPool, g *guard.Guard) {
	closeBoth := func() {
		a.Close()
		b.Close()
	}
	var wg sync.WaitGroup
	wg.Go(g.Func("splice_relay", func() {
		defer closeBoth()
		if len(buffered) > 0 {
			if _, err := b.Write(buffered); err != nil {
				return
			}
		}
		pipe(b, a, pool)
	}))
	func() {
		defer closeBoth()
		pipe(a, b, pool)
	}()
	wg.Wait()
}

// spliceAddr is the address the splice transport dials for port: one key, so one pool of idle
// streams, per port.
func spliceAddr(port int) string { return "agent:" + strconv.Itoa(port) }

// spliceDial opens a splice stream for the transport (addr from spliceAddr).
func (c *Conn) spliceDial(ctx context.Context, _, addr string) (net.Conn, error) {
	_, p, err := net.SplitHostPort(addr)
	port, ok := parsePort(p)
	if err != nil || !ok {
		return nil, fmt.Errorf("tunnel: splice address %q", addr)
	}
	return c.openSplice(ctx, port)
}

// openSplice opens a stream and asks the agent to splice it to port. The answer is awaited (the
// agent dials its upstream first), bounded by ctx; a refusal is a *RefusedError.
func (c *Conn) openSplice(ctx context.Context, port int) (net.Conn, error) {
	m := c.server.metrics.spliceStreams
	st, err := c.session.OpenStream()
	if err != nil {
		m.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("%w: %w", errOpenStream, err)
	}
	stop := context.AfterFunc(ctx, func() { st.SetDeadline(time.Unix(1, 0)) }) // guard: only sets a deadline
	conn, err := spliceHandshake(st, port)
	if !stop() && err == nil {
		conn.Close()
		err = ctx.Err()
	}
	if err != nil {
		st.Close()
		var refused *RefusedError
		if errors.As(err, &refused) {
			m.WithLabelValues("refused").Inc()
		} else {
			m.WithLabelValues("error").Inc()
		}
		return nil, err
	}
	st.SetDeadline(time.Time{})
	m.WithLabelValues("ok").Inc()
	return &bulkWriter{Conn: conn, pool: &c.server.buffers}, nil
}

func spliceHandshake(st net.Conn, port int) (net.Conn, error) {
	if _, err := fmt.Fprintf(st, "GET / HTTP/1.1\r\nHost: agent\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %d\r\n\r\n",
		SpliceUpgradeToken, PortHeader, port); err != nil {
		return nil, fmt.Errorf("tunnel: splice stream: %w", err)
	}
	br := bufio.NewReaderSize(st, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, fmt.Errorf("tunnel: splice stream: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return nil, &RefusedError{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}
	}
	if !headerHasToken(resp.Header, "Upgrade", SpliceUpgradeToken) {
		return nil, fmt.Errorf("tunnel: splice stream: the agent switched to %q", resp.Header.Get("Upgrade"))
	}
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: st, r: br}, nil
	}
	return st, nil
}

// spliced is req as the agent's proxy sent it upstream on the per-request path, for a splice
// stream to its port: without the edge's headers, Authorization and Forwarded (that proxy drops
// them), addressed to the splice transport's key for the port. false: the request keeps the
// per-request path (an edge-tcp switch, which the agent makes itself; a missing or bad port,
// which it answers).
func (s *Server) spliced(req *http.Request) (*http.Request, bool) {
	port, ok := parsePort(req.Header.Get(PortHeader))
	if !ok || headerHasToken(req.Header, "Upgrade", TCPUpgradeToken) {
		return nil, false
	}
	out := *req
	out.Header = req.Header.Clone()
	s.opts.RemoveEdgeHeaders(out.Header)
	out.Header.Del("Authorization")
	out.Header.Del("Forwarded")
	u := *req.URL
	u.Scheme, u.Host = "http", spliceAddr(port)
	out.URL = &u
	if out.Host == "" {
		out.Host = req.URL.Host // what the per-request path sent as Host
	}
	return &out, true
}

// Splice opens a splice stream to port on the agent, on the named connection or any of the
// agent's that splices: for a holder relaying another edge's spliced connection (the bytes of
// requests it does not parse). Until closed, the stream keeps its connection from closing when
// it drains, as a request in flight does; it does not count toward MaxStreamsPerAgent (it is
// another edge's keep-alive connection, idle most of the time, as this edge's own idle splice
// streams are). When the connection drains, the stream is closed once it has been quiet for a
// second after an answer from the agent (idle at its client, as far as bytes tell), or with the
// connection. Errors: ErrAgentNotConnected or ErrConnectionGone (not here), ErrNoSplice,
// *RefusedError (the agent's answer), or a failure of the connection.
func (s *Server) Splice(ctx context.Context, agentID, connectionID string, port int) (net.Conn, error) {
	var only *Conn
	if connectionID != "" {
		if only = s.Conn(agentID, connectionID); only == nil {
			return nil, ErrConnectionGone
		}
		if only.splice == nil {
			return nil, ErrNoSplice
		}
	}
	var skip []*Conn
	for {
		c, err := s.holdConn(agentID, only, skip)
		if err != nil {
			return nil, err
		}
		st, err := c.openSplice(ctx, port)
		if err != nil {
			c.releaseHeld()
			if only == nil && errors.Is(err, errOpenStream) {
				skip = append(skip, c)
				continue
			}
			return nil, err
		}
		h := &heldStream{Conn: st, c: c}
		h.lastIn.Store(time.Now().UnixNano())
		c.hold(h)
		return h, nil
	}
}

// holdConn picks a connection of the agent that splices for a held stream and counts it in
// flight on that connection only.
func (s *Server) holdConn(agentID string, only *Conn, skip []*Conn) (*Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _, err := s.pickLocked(agentID, only, skip, func(c *Conn) bool { return c.splice != nil })
	if errors.Is(err, ErrAgentNotConnected) && len(skip) == 0 {
		if e := s.agents[agentID]; e != nil && len(e.conns) > 0 {
			err = ErrNoSplice // connected, but no connection splices
		}
	}
	if err != nil {
		return nil, err
	}
	c.inflight++
	return c, nil
}

// releaseHeld ends a held stream on c; a draining connection closes with its last use.
func (c *Conn) releaseHeld() {
	s := c.server
	s.mu.Lock()
	c.inflight--
	last := c.draining && c.inflight == 0
	s.mu.Unlock()
	if last {
		c.session.Close()
	}
}

// reapSplices closes, every spliceReap, the idle splice streams of c's pool (all of them: the
// next requests open new ones, one round trip each) and the held ones that have been quiet for
// heldIdleTimeout after an answer (the other edge takes a spliced connection that old for
// expired anyway), until the session ends.
func (c *Conn) reapSplices() {
	c.every(c.server.opts.spliceReap, func() bool {
		c.splice.CloseIdleConnections()
		c.closeQuietHeld(c.server.opts.heldIdleTimeout)
		return true
	})
}

// every calls f every d until the session ends or f returns false.
func (c *Conn) every(d time.Duration, f func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.session.CloseChan():
			return
		case <-t.C:
		}
		if !f() {
			return
		}
	}
}

// closeQuietHeld closes the held splice streams that went quiet for d after an answer.
func (c *Conn) closeQuietHeld(d time.Duration) int {
	now := time.Now().UnixNano()
	var quiet []*heldStream
	c.server.mu.Lock()
	for h := range c.held {
		if h.idle(now, d) {
			quiet = append(quiet, h)
		}
	}
	c.server.mu.Unlock()
	for _, h := range quiet {
		h.Close()
	}
	return len(quiet)
}

// heldStream is a splice stream given to Server.Splice's caller. It notes when bytes last moved
// each way, for the drain to tell an idle one.
type heldStream struct {
	net.Conn
	c       *Conn
	lastIn  atomic.Int64 // unix ns: the last bytes from the agent (an answer)
	lastOut atomic.Int64 // unix ns: the last bytes to the agent (a request)
	once    sync.Once
}

func (h *heldStream) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if n > 0 {
		h.lastIn.Store(time.Now().UnixNano())
	}
	return n, err
}

func (h *heldStream) Write(p []byte) (int, error) {
	n, err := h.Conn.Write(p)
	if n > 0 {
		h.lastOut.Store(time.Now().UnixNano())
	}
	return n, err
}

func (h *heldStream) Close() error {
	err := h.Conn.Close()
	h.once.Do(func() {
		h.c.unhold(h)
		h.c.releaseHeld()
	})
	return err
}

// idle: the last bytes were the agent's answer, and nothing moved for d since.
func (h *heldStream) idle(now int64, d time.Duration) bool {
	in, out := h.lastIn.Load(), h.lastOut.Load()
	return in >= out && now-in >= int64(d)
}

// hold adds a held splice stream; on a draining connection it makes sure a sweep runs.
func (c *Conn) hold(h *heldStream) {
	s := c.server
	s.mu.Lock()
	if c.held == nil {
		c.held = map[*heldStream]struct{}{}
	}
	c.held[h] = struct{}{}
	sweep := c.draining && !c.sweeping
	c.sweeping = c.sweeping || sweep
	s.mu.Unlock()
	if sweep {
		go func() { defer s.opts.Guard.Recover("tunnel_control", c.crashed); c.sweepHeld() }()
	}
}

func (c *Conn) unhold(h *heldStream) {
	c.server.mu.Lock()
	delete(c.held, h)
	c.server.mu.Unlock()
}

// startSweep runs the sweep of held splice streams once the connection drains. Called with
// server.mu held.
func (c *Conn) startSweepLocked() {
	if len(c.held) > 0 && !c.sweeping {
		c.sweeping = true
		go func() { defer c.server.opts.Guard.Recover("tunnel_control", c.crashed); c.sweepHeld() }()
	}
}

// sweepHeld closes the draining connection's held splice streams as they go idle, so that the
// connection closes once its requests are done: the edge that holds such a stream as a
// keep-alive connection cannot be told to stop using it, but it sends nothing on one it is not
// using. It stops when none is left or the session ends.
func (c *Conn) sweepHeld() {
	c.every(spliceSweep, func() bool {
		c.server.mu.Lock()
		left := len(c.held)
		if left == 0 {
			c.sweeping = false
		}
		c.server.mu.Unlock()
		if left == 0 {
			return false
		}
		c.closeQuietHeld(spliceQuiet)
		return true
	})
}
