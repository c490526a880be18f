package tunnel

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// ConnInfo describes one agent connection, as the API for GitLab lists it (the caller adds the
// holding edge's URL).
type ConnInfo struct {
	AgentID      string `json:"agent_id"`
	ProjectID    string `json:"project_id,omitempty"`
	ConnectionID string `json:"connection_id"`
	AgentInfo
	ConnectedAt time.Time `json:"connected_at"`
	RemoteAddr  string    `json:"-"`
}

// Conn is one agent connection held by this edge.
type Conn struct {
	info      ConnInfo
	server    *Server
	session   *yamux.Session
	transport RoundTripCloser
	splice    RoundTripCloser // requests over splice streams; nil when the agent does not splice
	done      chan struct{}   // closed once the session is closed and c forgotten

	// guarded by server.mu
	entry    *agentEntry
	draining bool
	inflight int
	held     map[*heldStream]struct{} // splice streams given out by Server.Splice
	sweeping bool                     // sweepHeld runs

	ctrl      *control // the agent's control stream, set by the handshake
	ctrlMu    sync.Mutex
	drainSent bool // the drain message is sent
}

// Info describes the connection.
func (c *Conn) Info() ConnInfo { return c.info }

// ID is the connection id, random per connection.
func (c *Conn) ID() string { return c.info.ConnectionID }

// AgentID is the verified agent id.
func (c *Conn) AgentID() string { return c.info.AgentID }

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the connection at once, requests in flight included (the agent reconnects).
func (c *Conn) Close() error { return c.session.Close() }

// Transport sends requests through this connection only (for a caller that names it).
func (c *Conn) Transport() http.RoundTripper { return &roundTripper{s: c.server, conn: c} }

func (s *Server) newConn(id Identity, info AgentInfo, remote string) *Conn {
	c := &Conn{
		info: ConnInfo{
			AgentID:      id.AgentID,
			ProjectID:    id.ProjectID,
			ConnectionID: rand.Text(),
			AgentInfo:    info,
			ConnectedAt:  time.Now().UTC(),
			RemoteAddr:   remote,
		},
		server: s,
		done:   make(chan struct{}),
	}
	streams := &http.Transport{
		DialContext:           c.openStream,
		DisableCompression:    true, // the caller's Accept-Encoding passes as it is
		MaxIdleConnsPerHost:   s.opts.MaxIdleStreams,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ReadBufferSize:        32 << 10,
		WriteBufferSize:       32 << 10,
	}
	c.transport = wrap(s.opts.WrapTransport, streams)
	if info.Has(FeatureSplice) {
		// The same limits; each idle splice stream is an idle connection to the upstream, kept
		// per port as http.Transport keeps connections per host.
		splices := streams.Clone()
		splices.DialContext = c.spliceDial
		c.splice = wrap(s.opts.WrapTransport, splices)
	}
	return c
}

func wrap(w func(*http.Transport) RoundTripCloser, t *http.Transport) RoundTripCloser {
	if w == nil {
		return t
	}
	return w(t)
}

func (c *Conn) openStream(context.Context, string, string) (net.Conn, error) {
	st, err := c.session.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errOpenStream, err)
	}
	return &bulkWriter{Conn: st, pool: &c.server.buffers}, nil
}

// upgrade answers 101 on the hijacked connection and starts the yamux session on it.
func (s *Server) upgrade(netConn net.Conn, brw *bufio.ReadWriter, c *Conn) error {
	// The server may have set deadlines for reading the request; the session has its own keep-alive.
	if err := netConn.SetDeadline(time.Time{}); err != nil {
		return err
	}
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\n\r\n",
		UpgradeToken, ConnectionIDHeader, c.info.ConnectionID)
	if err := brw.Flush(); err != nil {
		return err
	}
	var rwc net.Conn = netConn
	if brw.Reader.Buffered() > 0 {
		rwc = &bufferedConn{Conn: netConn, r: brw.Reader}
	}
	session, err := yamux.Server(framed(rwc, s.opts.Guard), s.yamux)
	if err != nil {
		return err
	}
	c.session = session
	return nil
}

// bufferedConn reads what the HTTP server had already buffered before the connection itself.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// serveControl refuses the streams an agent opens after its control stream (the handshake
// accepted that one): the edge opens every other stream.
func (c *Conn) serveControl() {
	defer c.server.wg.Done()
	for {
		st, err := c.session.AcceptStream()
		if err != nil {
			return
		}
		st.Close()
	}
}

// receiveControl follows the agent's control messages.
func (c *Conn) receiveControl() {
	defer c.server.wg.Done()
	c.ctrl.receive(func(typ string) {
		if typ == msgDrain {
			c.server.log.Info("agent asks to drain its connection", "agent_id", c.info.AgentID, "connection_id", c.info.ConnectionID)
			c.retire()
		}
	})
}

// wait forgets c when its session ends. Deferred, the forget and the close of done happen even
// when closing the idle streams (or OnDisconnect) panics: Drain waits for done.
func (c *Conn) wait() {
	defer c.server.wg.Done()
	defer close(c.done)
	defer c.server.forget(c)
	<-c.session.CloseChan()
	c.closeIdle()
}

// crashed ends c after a panic in one of its goroutines (the guard's cleanup): its session
// closes, wait forgets it, and the agent connects again.
func (c *Conn) crashed(bool) { c.session.Close() }

// sendDrain tells the agent to connect again (once).
func (c *Conn) sendDrain() {
	c.ctrlMu.Lock()
	owed := !c.drainSent
	c.drainSent = true
	c.ctrlMu.Unlock()
	if owed {
		c.ctrl.send(msgDrain)
	}
}

// retire stops new requests on c and closes it once those in flight are done. Its idle splice
// streams are closed at once (no request will take them); held ones as they go quiet.
func (c *Conn) retire() {
	s := c.server
	s.mu.Lock()
	was := s.deactivate(c)
	idle := c.inflight == 0
	c.startSweepLocked()
	s.mu.Unlock()
	if was {
		s.disconnected(c)
	}
	if idle {
		c.session.Close()
	}
	c.closeIdle()
}

// closeIdle closes the idle streams of both transports.
func (c *Conn) closeIdle() {
	c.transport.CloseIdleConnections()
	if c.splice != nil {
		c.splice.CloseIdleConnections()
	}
}
