package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gitlab.com/edge/edge/h1"
)

// A connection's state, as the drain sees it.
const (
	stateNew    int32 = iota // accepted, its first request not yet begun
	stateIdle                // between requests: the drain closes it
	stateActive              // reading or serving a request
)

// readBufferSize is a connection's read buffer, and so the largest head the engine reads: a
// larger one goes to net/http, which reads up to limits.max_header_bytes.
const readBufferSize = 4 << 10

type conn struct {
	s      *Server
	rwc    net.Conn
	tls    *tls.ConnectionState
	remote string
	ctx    context.Context // the connection's: its requests' contexts derive from it
	br     *bufio.Reader
	bw     *bufio.Writer
	head   h1.Request
	state  atomic.Int32
	served int
	// lastPOST: the last request was a POST.
	lastPOST bool
	watcher  watcher
	w        response // reused: a request's answer
	keys     []string // reused: header names, sorted for writing
}

func (s *Server) newConn(rwc net.Conn) *conn {
	c := &conn{s: s, rwc: rwc, remote: rwc.RemoteAddr().String()}
	c.ctx = context.WithValue(context.WithValue(context.Background(), http.ServerContextKey, s.fallback), http.LocalAddrContextKey, rwc.LocalAddr())
	c.watcher.c = c
	return c
}

// serve runs the connection: requests one after another until it closes, is handed off, or is
// hijacked. A panic here ends the connection, never the process.
func (c *conn) serve() {
	keep := false // the connection is no longer the engine's: handed off or hijacked
	defer func() {
		if v := recover(); v != nil {
			c.s.guard.Caught("connection", v)
			keep = false
		}
		c.watcher.disarm()
		if !keep {
			c.rwc.Close()
		}
		c.s.remove(c)
		c.release()
	}()
	if tc, ok := c.rwc.(*tls.Conn); ok && !c.handshake(tc) {
		return
	} else if ok && c.tls.NegotiatedProtocol == "h2" {
		keep = c.s.handoff.give(tc)
		return
	}
	c.br = c.s.readers.get(c.rwc)
	c.bw = c.s.writers.get(c.rwc)
	for {
		n, v, ok := c.readHead()
		if !ok {
			return
		}
		if v == h1.HandOff {
			keep = c.handOff()
			return
		}
		ctx, cancel := context.WithCancel(c.ctx)
		r, err := c.request(ctx, n)
		if err != nil {
			cancel()
			keep = c.handOff() // a target net/http's own parse refuses: its answer, as always
			return
		}
		switch c.serveRequest(r, cancel) {
		case hijacked:
			keep = true
			return
		case closeAfter:
			return
		}
	}
}

func (c *conn) handshake(tc *tls.Conn) bool {
	if d := c.s.readHeaderTimeout; d > 0 {
		tc.SetDeadline(time.Now().Add(d))
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.s.log.Debug("TLS handshake failed", "remote", c.remote, "error", err)
		return false
	}
	tc.SetDeadline(time.Time{})
	state := tc.ConnectionState()
	c.tls = &state
	return true
}

// readHead reads until the buffer holds a whole head (Accept, n its length) or bytes for net/http
// (HandOff); false: the connection ended, timed out, or drains while idle.
func (c *conn) readHead() (n int, v h1.Verdict, ok bool) {
	if c.served == 0 {
		c.deadline(c.s.readHeaderTimeout)
		if _, err := c.br.Peek(1); err != nil {
			return 0, 0, false
		}
	} else {
		c.deadline(c.s.idleTimeout)
		// The deadline first, then the state, then the drain: a drain that begins meanwhile either
		// sees this connection idle, or is seen here.
		c.state.Store(stateIdle)
		if c.s.draining.Load() {
			return 0, 0, false
		}
		// Four bytes, as net/http waits for before it reads a next request: fewer, and the
		// connection ends without an answer.
		peek, err := c.br.Peek(4)
		if err != nil {
			return 0, 0, false
		}
		if c.lastPOST {
			// Blank lines after a POST's body, which old clients send, are skipped (net/http).
			c.br.Discard(len(peek) - len(bytes.TrimLeft(peek, "\r\n")))
		}
	}
	c.state.Store(stateActive)
	// A head that came whole with its first bytes (the common case) never waits: the header
	// timeout is armed only when more must be read.
	armed := c.served == 0
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		n, v = h1.Parse(buf, &c.head, c.s.limits)
		if v != h1.NeedMore {
			return n, v, true
		}
		if len(buf) == c.br.Size() {
			return 0, h1.HandOff, true // a head larger than the buffer
		}
		if !armed {
			c.deadline(c.s.readHeaderTimeout)
			armed = true
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			// A head cut short: net/http reads what came and answers it as it would (400); one
			// that stalled past the timeout closes, as net/http closes it.
			return 0, h1.HandOff, !isTimeout(err)
		}
	}
}

func (c *conn) deadline(d time.Duration) {
	if d > 0 {
		c.rwc.SetReadDeadline(time.Now().Add(d))
	} else {
		c.rwc.SetReadDeadline(time.Time{})
	}
}

// handOff gives the connection, with the bytes read of it, to the fallback server.
func (c *conn) handOff() bool {
	c.rwc.SetReadDeadline(time.Time{})
	read, _ := c.br.Peek(c.br.Buffered())
	hc := &handedConn{Conn: c.rwc, prefix: bytes.NewReader(bytes.Clone(read)), tls: c.tls}
	c.s.remove(c)
	return c.s.handoff.give(hc)
}

// release gives the connection's buffers back for the next one.
func (c *conn) release() {
	if c.br != nil {
		c.s.readers.put(c.br)
		c.br = nil
	}
	if c.bw != nil {
		c.s.writers.put(c.bw)
		c.bw = nil
	}
	if c.w.w != nil {
		c.w.w.Reset(nil)
		c.s.lengthBuffers.Put(c.w.w)
	}
	// A hijacked connection's request can outlive it (a parked poll's body refers to it): what
	// it refers to of the connection must be small.
	c.w = response{}
	c.keys = nil
}

// bufferPool keeps connections' readers or writers between connections.
type bufferPool[T any] struct {
	pool  sync.Pool
	fresh func(net.Conn) T
	reset func(T, net.Conn)
}

func (p *bufferPool[T]) get(c net.Conn) T {
	if v, ok := p.pool.Get().(T); ok {
		p.reset(v, c)
		return v
	}
	return p.fresh(c)
}

func (p *bufferPool[T]) put(v T) {
	p.reset(v, nil)
	p.pool.Put(v)
}

const writeBufferSize = 4 << 10

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
