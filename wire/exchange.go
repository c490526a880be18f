package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"gitlab.com/edge/edge/h1"
	"gitlab.com/edge/edge/tunnel"
)

// An Exchange is a request written inline from bytes the caller encoded, and its answer's head
// read in place from the connection's buffer: no http.Request goes out, no http.Response comes
// back. An answer outside h1's subset (1xx, chunked, read to the end, odd framing) is not read
// here: Held gives it to net/http's reader, on the same connection.
type Exchange struct {
	c        *inlineConn
	stop     func() bool
	head     int // the answer head's length in the connection's buffer
	Answer   h1.Response
	Accepted bool // false: the answer is Held's to read
}

// answerLimits bounds an answer head the exchange reads itself; a longer one is net/http's.
var answerLimits = h1.Limits{MaxHead: 4 << 10, MaxHeaders: h1.DefaultMaxHeaders}

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
		*x = Exchange{c: c, Answer: h1.Response{Headers: x.Answer.Headers[:0]}}
		raw, socket := c.plainSocket()
		if socket && mayPark {
			held, err := t.park(c, raw, out, nil)
			if held != nil {
				return nil, held, nil
			}
			if err != nil {
				return nil, nil, err // not sent, the connection closed: a poll never goes twice
			}
		}
		x.stop = context.AfterFunc(ctx, c.canceled()) // guard: only sets a deadline
		err = x.awaitHead(ctx)
		if err == nil && !(socket && mayPark) {
			if socket {
				_, err = c.sendAndAwait(raw, out, nil) // the read that follows finds the answer
			} else {
				err = c.write(out)
			}
		}
		if err == nil {
			err = x.readHead(req, head)
		}
		if err == nil {
			return x, nil, nil
		}
		x.stop()
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

// awaitHead bounds the wait for the answer's head by the response-header timeout.
func (x *Exchange) awaitHead(ctx context.Context) error {
	if d := x.c.t.responseHeaderTimeout; d > 0 {
		x.c.SetReadDeadline(time.Now().Add(d))
		// A cancellation whose deadline landed before this one would be undone by it.
		return ctx.Err()
	}
	return nil
}

// readHead reads the answer's head and parses it.
func (x *Exchange) readHead(req *http.Request, head bool) error {
	c := x.c
	br := c.reader()
	// The first byte alone: a connection closed before the answer began stays io.EOF.
	if _, err := br.Peek(1); err != nil {
		return err
	}
	for {
		buf, _ := br.Peek(br.Buffered())
		n, v := h1.ParseResponse(buf, &x.Answer, head, answerLimits)
		switch {
		case v == h1.Accept && x.Answer.Status >= 200 && !x.Answer.Chunked:
			x.head, x.Accepted = n, true
			return nil
		case v != h1.NeedMore:
			return nil // net/http's to read, deadline and all
		case len(buf) == br.Size():
			return nil
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
	x.stop()
	return &Held{c: x.c}
}

// WriteBody writes the answer's body to w, with no read deadline (the request's context bounds
// it), and gives the connection back for the next request once the body is read whole; on an
// error (the cell's or w's) the connection closes. An accepted answer's head stays readable in
// x.Answer until WriteBody.
func (x *Exchange) WriteBody(w io.Writer) error {
	c := x.c
	br := c.br
	if c.t.responseHeaderTimeout > 0 {
		c.SetReadDeadline(time.Time{})
	}
	br.Discard(x.head)
	left := x.Answer.ContentLength
	if x.Answer.NoBody || left < 0 {
		left = 0
	}
	for left > 0 {
		if br.Buffered() == 0 {
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
	c.release(x.stop, !x.Answer.Close)
	return nil
}

// Close gives the exchange up before its body is written: the connection closes.
func (x *Exchange) Close() { x.close() }

func (x *Exchange) close() {
	x.stop()
	x.c.Close()
}
