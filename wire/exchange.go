package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"gitlab.com/edge/edge/h1"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tunnel"
)

// An Exchange is a request written inline from bytes the caller encoded, and its answer's head
// read in place from the connection's buffer: no http.Request goes out, no http.Response comes
// back. An answer outside h1's subset (1xx, chunked, read to the end, odd framing) is not read
// here: Held gives it to net/http's reader, on the same connection.
type Exchange struct {
	c        *inlineConn
	ctx      context.Context // the request's
	stop     func() bool     // the watch of ctx; nil until watchCancel
	start    time.Time       // the request went out (with the deadline armed)
	quick    bool            // the read deadline is quickWait's, not the header timeout's
	parkable bool            // a poll that is parked when its answer has not begun within parkAfter
	head     int             // the answer head's length in the connection's buffer
	Answer   h1.Response
	Accepted bool // false: the answer is Held's to read
}

// maxAnswerHead bounds an answer head the exchange reads itself; a longer one is net/http's.
const maxAnswerHead = 4 << 10

// Exchange writes out (the request's head and body, encoded) to key and reads the answer's
// head. req is the request out stands for: its context bounds the exchange, and whether it may
// go twice (once, when a kept-alive connection closed as it went out) is judged from it, as
// RoundTrip judges. The Exchange is the connection's: it is not used after WriteBody, Close or
// Held.
func (t *InlineTransport) Exchange(req *http.Request, key string, out []byte) (*Exchange, error) {
	x, _, err := t.exchange(req, key, out, false)
	return x, err
}

// ExchangeOrHold is Exchange for a long poll on a transport for held requests: when no answer
// began within parkAfter, the request is left waiting on its connection and returned as a Held,
// for the caller to park (as the Parker's RoundTrip returns it).
func (t *InlineTransport) ExchangeOrHold(req *http.Request, key string, out []byte) (*Exchange, *Held, error) {
	return t.exchange(req, key, out, t.holdUnbuffered)
}

func (t *InlineTransport) exchange(req *http.Request, key string, out []byte, mayPark bool) (*Exchange, *Held, error) {
	ctx := req.Context()
	head := req.Method == http.MethodHead
	for attempt := 0; ; attempt++ {
		c, reused, err := t.conn(ctx, key)
		if err != nil {
			return nil, nil, err
		}
		x := &c.x
		*x = Exchange{c: c, ctx: ctx, Answer: h1.Response{Headers: x.Answer.Headers[:0]}}
		raw, socket := c.plainSocket()
		switch {
		case socket && mayPark:
			x.start = time.Now()
			var held *Held
			if held, err = t.park(c, raw, out, nil); held != nil {
				return nil, held, nil
			}
			if err != nil {
				return nil, nil, err // not sent, the connection closed: a poll never goes twice
			}
			x.quick, x.parkable = true, true // the answer began within parkAfter, the deadline still parkAfter's
		case socket:
			err = x.sendAndAwait(raw, out)
		default:
			if err = x.slow(); err == nil {
				err = c.write(out)
			}
		}
		if err == nil {
			err = x.readHead(req, head)
		}
		if err == nil {
			return x, nil, nil
		}
		if errors.Is(err, errNotBegun) {
			return nil, t.hold(c), nil
		}
		x.unwatch()
		c.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, nil, fmt.Errorf("%w: %w", ctxErr, err)
		}
		if reused && attempt == 0 && replayable(req) && closedByPeer(err) {
			continue
		}
		return nil, nil, err
	}
}

// write sends an encoded request.
func (c *inlineConn) write(out []byte) error {
	if len(out) > unboundedSend {
		c.SetWriteDeadline(time.Now().Add(tunnel.WriteStall))
		defer c.SetWriteDeadline(time.Time{})
	}
	_, err := c.Write(out)
	return err
}

// errNotBegun: a parkable poll's answer had not begun within parkAfter after all; it is parked.
var errNotBegun = errors.New("wire: the answer has not begun")

// quickWait is how long an exchange waits for its answer before it watches the request's context
// (its cancellation then ends the wait): most answers come sooner, and the watch costs
// allocations and locks per request. The engine watches a client only after 100 ms.
const quickWait = 50 * time.Millisecond

// sendAndAwait sends out once the wait for the answer is armed (the read that follows finds it)
// and waits for its start: quickWait unwatched, then, for a slow answer, the rest of the
// response-header timeout with the request's context watched (slow).
func (x *Exchange) sendAndAwait(raw syscall.RawConn, out []byte) error {
	c := x.c
	x.start = time.Now()
	if d := c.t.responseHeaderTimeout; d > 0 && d <= quickWait {
		if err := x.slow(); err != nil {
			return err
		}
		_, err := c.sendAndAwait(raw, out, nil)
		return err
	}
	x.quick = true
	c.SetReadDeadline(x.start.Add(quickWait))
	if err := x.ctx.Err(); err != nil {
		return err
	}
	_, err := c.sendAndAwait(raw, out, nil)
	if err != nil && hop.IsTimeout(err) && x.ctx.Err() == nil {
		return x.slow()
	}
	return err
}

// slow watches the request's context and bounds what is left of the head by the
// response-header timeout: before any read that may wait.
func (x *Exchange) slow() error {
	x.watchCancel()
	if !x.quick && !x.start.IsZero() {
		return nil
	}
	x.quick = false
	if x.start.IsZero() {
		x.start = time.Now()
	}
	return x.awaitHead(x.start)
}

// awaitHead bounds the wait for the answer's head by the response-header timeout from start.
func (x *Exchange) awaitHead(start time.Time) error {
	if d := x.c.t.responseHeaderTimeout; d > 0 {
		x.c.SetReadDeadline(start.Add(d))
	} else {
		x.c.SetReadDeadline(time.Time{})
	}
	// A cancellation whose deadline landed before this one would be undone by it.
	return x.ctx.Err()
}

// watchCancel has the request's cancellation end whatever the connection waits for, from now
// on; it is armed only before a read that may wait.
func (x *Exchange) watchCancel() {
	if x.stop == nil {
		x.stop = context.AfterFunc(x.ctx, x.c.canceled()) // guard: only sets a deadline
	}
}

// unwatch ends the watch; false: the request was canceled and the connection's deadline set.
func (x *Exchange) unwatch() bool {
	if x.stop == nil {
		return true
	}
	return x.stop()
}

// readHead reads the answer's head and parses it.
func (x *Exchange) readHead(req *http.Request, head bool) error {
	c := x.c
	br := c.reader()
	// The first byte alone: a connection closed before the answer began stays io.EOF.
	if _, err := br.Peek(1); err != nil {
		if !x.quick || !hop.IsTimeout(err) || x.ctx.Err() != nil {
			return err
		}
		// The poller said the socket was readable and it was not (a readiness it reported late,
		// for bytes already read): nothing came within the quick wait. A poll parks; any other
		// request waits on within the header timeout.
		if x.parkable {
			return errNotBegun
		}
		if err := x.slow(); err != nil {
			return err
		}
		if _, err := br.Peek(1); err != nil {
			return err
		}
	}
	for {
		buf, _ := br.Peek(br.Buffered())
		n, v := h1.ParseResponse(buf, &x.Answer, head, h1.Limits{MaxHead: maxAnswerHead, MaxHeaders: h1.DefaultMaxHeaders})
		switch {
		case v == h1.Accept && x.Answer.Status >= 200 && !x.Answer.Chunked:
			x.head, x.Accepted = n, true
			return nil
		case v != h1.NeedMore:
			return nil // net/http's to read, deadline and all
		case len(buf) == br.Size():
			return nil
		}
		if err := x.slow(); err != nil {
			return err
		}
		if _, err := br.Peek(len(buf) + 1); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // a head cut short: net/http's reader says how, as ever
			}
			return err
		}
	}
}

// Head is the accepted answer's head, in the connection's buffer: x.Answer's fields point into
// it. It is good until WriteBody.
func (x *Exchange) Head() []byte {
	b, _ := x.c.br.Peek(x.head)
	return b
}

// Held hands the answer, not read yet, to net/http's reader through the Held transport.
func (x *Exchange) Held() *Held {
	x.unwatch()
	return &Held{c: x.c}
}

// WriteBody writes the answer's body to w, with no read deadline (the request's context bounds
// it), and gives the connection back for the next request once the body is read whole; on an
// error (the cell's or w's) the connection closes. An accepted answer's head stays readable in
// x.Answer until WriteBody.
func (x *Exchange) WriteBody(w io.Writer) error {
	c := x.c
	br := c.br
	c.SetReadDeadline(time.Time{}) // the body is bounded by the request's context alone
	br.Discard(x.head)
	left := x.Answer.ContentLength
	if x.Answer.NoBody || left < 0 {
		left = 0
	}
	for left > 0 {
		if br.Buffered() == 0 && left > int64(br.Size()) {
			// A large rest is read around the reader, in copy-buffer-sized reads (ReverseProxy's
			// 32 KiB): the reader's 4 KiB would cost eight times the system calls.
			x.watchCancel()
			if err := x.copyLarge(w, left); err != nil {
				x.close()
				return err
			}
			break
		}
		if br.Buffered() == 0 {
			x.watchCancel()
			if _, err := br.Peek(1); err != nil {
				x.close()
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		chunk, _ := br.Peek(int(min(int64(br.Buffered()), left)))
		if _, err := w.Write(chunk); err != nil {
			x.close()
			return err
		}
		br.Discard(len(chunk))
		left -= int64(len(chunk))
	}
	c.release(x.unwatch(), !x.Answer.Close)
	return nil
}

// copyLarge copies the body's last n bytes from the connection to w.
func (x *Exchange) copyLarge(w io.Writer, n int64) error {
	buf := x.c.t.copyBuffers.Get()
	defer x.c.t.copyBuffers.Put(buf)
	for n > 0 {
		m, err := x.c.Read(buf[:min(int64(len(buf)), n)])
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				return werr
			}
			n -= int64(m)
		}
		if err != nil && n > 0 {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

func (x *Exchange) close() {
	x.unwatch()
	x.c.Close()
}
