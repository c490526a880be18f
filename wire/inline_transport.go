package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"syscall"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tunnel"
)

// InlineTransport carries a plain-HTTP/1.1 request on the goroutine that asks: it writes the
// request and reads the answer's head itself, where http.Transport hands each request to a
// connection's writer and reader goroutines and back (two wake-ups per request, much of the cost
// of a small proxied request on a busy CPU). It takes only requests whose body is absent or
// already in memory and that expect nothing unusual of the connection; everything else (TLS,
// streamed uploads, Expect: 100-continue, upgrades) goes to the fallback transport, whose dialer,
// timeouts, idle limits and buffer sizes it shares. It serves edge's cells, and through
// cmd/edge the agent tunnels' two hops (edge to agent streams, agent to its upstreams).
//
// It never sends a request twice, but for a request without a body that is safe to repeat,
// once, when the peer closed a kept-alive connection as it went out (as http.Transport does).
type InlineTransport struct {
	fallback              *http.Transport
	dial                  func(ctx context.Context, network, addr string) (net.Conn, error)
	responseHeaderTimeout time.Duration
	idleTimeout           time.Duration
	maxIdlePerHost        int
	readBuffer            int
	writeBuffer           int

	// A connection takes a writer only to send and a reader only to read an answer, and gives
	// them back when the answer is read. With holdUnbuffered the reader is taken only once the
	// answer begins to arrive, so that a held request (a long poll) keeps no buffer; it costs
	// two more system calls per request.
	readers, writers sync.Pool
	copyBuffers      BufferPool // an Exchange's large bodies, in ReverseProxy's 32 KiB
	holdUnbuffered   bool

	mu   sync.Mutex
	idle map[string][]*inlineConn // by host:port, most recently used last
}

type inlineConn struct {
	net.Conn
	t      *InlineTransport
	key    string
	br     *bufio.Reader // while an answer is read; nil when idle
	idleAt time.Time
	// interim: a 1xx of the request in flight was passed on, so the cell saw it and the client
	// knows: it is never sent again.
	interim bool
	raw     syscall.RawConn // the socket, once asked for
	probe   quietProbe
	x       Exchange // the exchange in flight: one per connection, reused
	await   awaiting
	cut     func() // ends what the connection is doing: bound once
}

// canceled is what a canceled request does to its connection: whatever it is doing ends.
func (c *inlineConn) canceled() func() {
	if c.cut == nil {
		c.cut = func() { c.SetDeadline(time.Unix(1, 0)) }
	}
	return c.cut
}

// NewInlineTransport carries what it can inline and the rest with fallback, which must have a
// DialContext.
func NewInlineTransport(fallback *http.Transport) *InlineTransport {
	t := &InlineTransport{
		fallback:              fallback,
		dial:                  fallback.DialContext,
		responseHeaderTimeout: fallback.ResponseHeaderTimeout,
		idleTimeout:           fallback.IdleConnTimeout,
		maxIdlePerHost:        fallback.MaxIdleConnsPerHost,
		readBuffer:            fallback.ReadBufferSize,
		writeBuffer:           fallback.WriteBufferSize,
		idle:                  map[string][]*inlineConn{},
		copyBuffers:           BufferPool{Size: 32 << 10},
	}
	if t.dial == nil {
		t.dial = (&net.Dialer{}).DialContext
	}
	if t.idleTimeout <= 0 {
		t.idleTimeout = 90 * time.Second
	}
	if t.maxIdlePerHost <= 0 {
		t.maxIdlePerHost = http.DefaultMaxIdleConnsPerHost
	}
	t.readBuffer, t.writeBuffer = max(t.readBuffer, 4<<10), max(t.writeBuffer, 4<<10)
	t.readers.New = func() any { return bufio.NewReaderSize(nil, t.readBuffer) }
	t.writers.New = func() any { return bufio.NewWriterSize(nil, t.writeBuffer) }
	return t
}

// HoldUnbuffered makes the transport one for held requests (long polls): a connection takes a
// reader only once the answer begins to arrive, so a held request keeps no buffer, for two more
// system calls per request.
func (t *InlineTransport) HoldUnbuffered() { t.holdUnbuffered = true }

func (t *InlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.roundTrip(req, false)
}

// Parker carries long polls that may be parked: a request whose answer has not begun within
// parkAfter is left waiting on its connection, and RoundTrip returns that connection as a *Held
// error, for the handler to give its client's connection to Parking and return. The Held is the
// transport of the poll's second pass, which reads the answer.
func (t *InlineTransport) Parker() http.RoundTripper { return parker{t} }

type parker struct{ t *InlineTransport }

func (p parker) RoundTrip(req *http.Request) (*http.Response, error) { return p.t.roundTrip(req, true) }

func (t *InlineTransport) roundTrip(req *http.Request, mayPark bool) (*http.Response, error) {
	if !t.takes(req) {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		c, reused, err := t.conn(ctx, req.URL.Host)
		if err != nil {
			return nil, err
		}
		var resp *http.Response
		var stop func() bool
		if raw, socket := c.plainSocket(); socket && mayPark && t.holdUnbuffered {
			if held, err := t.park(c, raw, nil, req); held != nil || err != nil {
				return nil, err
			}
			// Answered at once: read here, as any request, with a reader at once (the answer has
			// begun: looking for it again would cost a system call).
			stop = context.AfterFunc(ctx, c.canceled()) // guard: only sets a deadline
			c.reader()
			if t.responseHeaderTimeout <= 0 {
				c.SetReadDeadline(time.Time{}) // parkAfter's, still in force
			}
			resp, err = c.afterSend(req, t.responseHeaderTimeout)
		} else {
			// A canceled request (the client went away) unblocks whatever the connection is doing.
			stop = context.AfterFunc(ctx, c.canceled()) // guard: only sets a deadline
			resp, err = c.roundTrip(req, t.responseHeaderTimeout)
		}
		if err != nil {
			stop()
			c.Close()
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("%w: %w", ctxErr, err)
			}
			// The cell closed a kept-alive connection as the request went out: only a request
			// that is safe to send twice and has no body to replay goes again, once, on a new
			// connection, as http.Transport does.
			if reused && attempt == 0 && !c.interim && replayable(req) && closedByPeer(err) {
				continue
			}
			return nil, err
		}
		return c.body(resp, stop, !resp.Close && !req.Close), nil
	}
}

// body hands the connection back once the answer has been read (at once for an empty one).
func (c *inlineConn) body(resp *http.Response, stop func() bool, reusable bool) *http.Response {
	if resp.Body == http.NoBody {
		c.release(stop(), reusable)
		return resp
	}
	resp.Body = &inlineBody{rc: resp.Body, c: c, stop: stop, reusable: reusable}
	return resp
}

// parkAfter is how long a long poll's handler waits for the answer before it parks: most polls
// are answered at once (a job waiting, a runner behind the queue), and taking the connection over
// for those would only cost.
const parkAfter = 50 * time.Millisecond

// park sends a request on c (its socket raw) and, when no answer began within parkAfter,
// returns the connection as a Held, waiting for the answer within the response-header timeout.
func (t *InlineTransport) park(c *inlineConn, raw syscall.RawConn, out []byte, req *http.Request) (*Held, error) {
	c.SetReadDeadline(time.Now().Add(parkAfter))
	sent, err := c.sendAndAwait(raw, out, req)
	if !sent {
		c.Close()
		return nil, err
	}
	if err == nil || !hop.IsTimeout(err) {
		// The answer (or the end of the connection) is read as any request's, its reader setting
		// the deadline it reads within.
		return nil, nil
	}
	h := t.hold(c)
	return h, h
}

// hold is the Held of a request sent on c whose answer has not begun within parkAfter: its
// answer is awaited within what is left of the response-header timeout.
func (t *InlineTransport) hold(c *inlineConn) *Held {
	h := &Held{c: c}
	if t.responseHeaderTimeout > 0 {
		h.deadline = time.Now().Add(t.responseHeaderTimeout - parkAfter)
	}
	c.SetReadDeadline(h.deadline)
	return h
}

// Held is a parked request: sent, its answer awaited on its connection. It is the error the
// Parker returns for it, and the transport of its second pass, which reads the answer once.
type Held struct {
	c        *inlineConn
	deadline time.Time // of the answer's start; zero: none
}

func (h *Held) Error() string { return "wire: long poll parked" }

// HeldOf is the parked request err returns, or nil.
func HeldOf(err error) *Held {
	var h *Held
	if errors.As(err, &h) {
		return h
	}
	return nil
}

// RoundTrip reads the answer of the parked request from the connection it went out on.
func (h *Held) RoundTrip(req *http.Request) (*http.Response, error) {
	c := h.c
	ctx := req.Context()
	stop := context.AfterFunc(ctx, c.canceled()) // guard: only sets a deadline
	resp, err := c.answer(req, c.t.responseHeaderTimeout)
	if err != nil {
		stop()
		c.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%w: %w", ctxErr, err)
		}
		return nil, err
	}
	return c.body(resp, stop, !resp.Close && !req.Close), nil
}

// Close gives the parked request up: its cell sees it canceled.
func (h *Held) Close() error { return h.c.Close() }

// awaitReadable waits until the answer begins, the cell closes or the header timeout passes.
func (h *Held) awaitReadable() error { return h.c.awaitReadable() }

// replayable: a request safe to send twice, as http.Transport judges it, but never a job claim:
// a jobs/request that reached the cell may have claimed a job, whatever its headers say.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody || req.URL.Path == JobsRequestPath {
		return false
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, keyed := req.Header["Idempotency-Key"]
	return keyed
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// takes says whether the request can be carried inline: plain HTTP/1.1 to the cell, no upgrade,
// no 100-continue, and a body that is absent or wholly in memory (so that writing it never waits
// on the client).
func (t *InlineTransport) takes(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.Header.Get("Expect") != "" || req.Header.Get("Upgrade") != "" {
		return false
	}
	switch b := req.Body.(type) {
	case nil:
		return true
	case MemoryBody:
		return b.Whole() != nil
	}
	return req.Body == http.NoBody
}

func (c *inlineConn) roundTrip(req *http.Request, headerTimeout time.Duration) (*http.Response, error) {
	if err := c.send(req); err != nil {
		return nil, err
	}
	return c.afterSend(req, headerTimeout)
}

// afterSend reads the answer to the request just sent, within the response-header timeout.
func (c *inlineConn) afterSend(req *http.Request, headerTimeout time.Duration) (*http.Response, error) {
	if headerTimeout > 0 {
		c.SetReadDeadline(time.Now().Add(headerTimeout))
		// A cancellation whose deadline landed before this one would be undone by it.
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
	}
	return c.answer(req, headerTimeout)
}

// answer reads the answer to the request sent last, within a read deadline already set.
func (c *inlineConn) answer(req *http.Request, headerTimeout time.Duration) (*http.Response, error) {
	if err := c.awaitAnswer(); err != nil {
		return nil, err
	}
	for {
		// ReadResponse turns a connection closed before the answer began into ErrUnexpectedEOF;
		// the first byte is awaited here so that this case stays io.EOF (closedByPeer).
		if _, err := c.br.Peek(1); err != nil {
			return nil, err
		}
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				resp.Body.Close()
				return nil, errors.New("cell switched protocols without being asked")
			}
			if headerTimeout > 0 {
				c.SetReadDeadline(time.Time{})
				if err := req.Context().Err(); err != nil {
					resp.Body.Close()
					return nil, err
				}
			}
			return resp, nil
		}
		// 1xx informational answers (103 Early Hints) go to the client as http.Transport passes
		// them, through the trace ReverseProxy installs.
		c.interim = true
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(resp.StatusCode, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

func (c *inlineConn) send(req *http.Request) error {
	if b, ok := req.Body.(MemoryBody); ok {
		if r := b.Whole(); r != nil {
			// Request.Write flushes the head before a body it does not know to be in memory: one
			// system call more per request, and a packet more, for a body that is.
			whole := *req
			whole.Body = io.NopCloser(r)
			req = &whole
		}
	}
	// A body a socket's buffer takes whole never waits for the cell to read; a larger one
	// (routing.body_token_limit raised) is bounded as relays are.
	if req.ContentLength > unboundedSend {
		c.SetWriteDeadline(time.Now().Add(tunnel.WriteStall))
		defer c.SetWriteDeadline(time.Time{})
	}
	bw := c.t.writers.Get().(*bufio.Writer)
	bw.Reset(c.Conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	c.t.writers.Put(bw)
	return err
}

// unboundedSend is the largest body the inline transport writes without a write deadline: less
// than a loopback or LAN socket's send buffer, and than a tunnel stream's window.
const unboundedSend = 64 << 10

// awaitAnswer waits, without a buffer when the connection is a socket, until the answer begins
// (or the connection ends or a deadline passes), then takes a reader.
func (c *inlineConn) awaitAnswer() error {
	if c.br == nil && c.t.holdUnbuffered && c.socket() {
		if err := c.awaitReadable(); err != nil {
			return err
		}
	}
	c.reader()
	return nil
}

func (c *inlineConn) reader() *bufio.Reader {
	if c.br == nil {
		c.br = c.t.readers.Get().(*bufio.Reader)
		c.br.Reset(c.Conn)
	}
	return c.br
}

// release puts the connection back for the next request once its answer is wholly read, or
// closes it when the answer said so or was not read to its end.
func (c *inlineConn) release(stopped, reusable bool) {
	if !stopped || !reusable || c.br.Buffered() > 0 {
		c.Close()
		return
	}
	c.br.Reset(nil)
	c.t.readers.Put(c.br)
	c.br = nil
	c.interim = false
	c.t.put(c)
}

// conn is an idle connection to key that is still open, or a new one.
func (t *InlineTransport) conn(ctx context.Context, key string) (c *inlineConn, reused bool, err error) {
	for c = t.get(key); c != nil; c = t.get(key) {
		if time.Since(c.idleAt) < t.idleTimeout && c.alive() {
			return c, true, nil
		}
		c.Close()
	}
	nc, err := t.dial(ctx, "tcp", key)
	if err != nil {
		return nil, false, err
	}
	return &inlineConn{Conn: nc, t: t, key: key}, false, nil
}

// get takes the most recently used idle connection to key.
func (t *InlineTransport) get(key string) *inlineConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	conns := t.idle[key]
	if len(conns) == 0 {
		return nil
	}
	c := conns[len(conns)-1]
	conns[len(conns)-1] = nil
	t.idle[key] = conns[:len(conns)-1]
	return c
}

func (t *InlineTransport) put(c *inlineConn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	conns := t.idle[c.key]
	// The oldest are first: drop those past the idle timeout, and one more when full.
	drop := 0
	for drop < len(conns) && (c.idleAt.Sub(conns[drop].idleAt) >= t.idleTimeout || len(conns)-drop >= t.maxIdlePerHost) {
		drop++
	}
	stale := append([]*inlineConn(nil), conns[:drop]...)
	conns = append(conns[:0], conns[drop:]...)
	t.idle[c.key] = append(conns, c)
	t.mu.Unlock()
	for _, s := range stale {
		s.Close()
	}
}

// CloseIdleConnections closes the idle connections of both transports.
func (t *InlineTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*inlineConn{}
	t.mu.Unlock()
	for _, conns := range idle {
		for _, c := range conns {
			c.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}

// inlineBody hands the connection back when the answer has been read to its end.
type inlineBody struct {
	rc       io.ReadCloser
	c        *inlineConn
	stop     func() bool
	reusable bool
	done     bool
}

func (b *inlineBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.done = true
		b.c.release(b.stop(), b.reusable)
	}
	return n, err
}

func (b *inlineBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	b.stop()
	return b.c.Close()
}
