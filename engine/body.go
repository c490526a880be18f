package engine

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gitlab.com/edge/edge/h1"
)

// body is a request's body, read from the connection's buffer and then the connection: by its
// Content-Length, or chunked. It may be read from another goroutine than the handler's (a
// transport's), so it locks; it ends and discards as net/http's server body does.
type body struct {
	c         *conn
	mu        sync.Mutex
	remaining int64             // by Content-Length
	chunked   *h1.ChunkedReader // nil: by Content-Length
	expecting bool              // the client asked for 100 Continue
	expect100 atomic.Bool       // ... and it is still to be sent, on the first read
	closed    bool
	early     bool        // closed with more left than the engine reads to keep the connection
	err       error       // sticky
	done      atomic.Bool // read to its end
	sawEOF    atomic.Bool // a read returned io.EOF
}

func (c *conn) newBody(n int64, expect100 bool) *body {
	b := &body{c: c, remaining: n, expecting: expect100}
	b.expect100.Store(expect100)
	if n < 0 {
		b.chunked = h1.NewChunkedReader(c.br)
	}
	return b
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.read(p)
}

func (b *body) read(p []byte) (n int, err error) {
	defer func() {
		if err == io.EOF {
			b.sawEOF.Store(true)
		}
	}()
	if b.err != nil {
		return 0, b.err
	}
	if b.expect100.Load() {
		b.c.w.writeContinue()
	}
	if b.chunked != nil {
		n, err = b.chunked.Read(p)
	} else {
		if int64(len(p)) > b.remaining {
			p = p[:b.remaining]
		}
		n, err = b.c.br.Read(p)
		b.remaining -= int64(n)
		switch {
		case b.remaining == 0:
			err = io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
	}
	switch {
	case err == io.EOF, b.chunked == nil && err == io.ErrUnexpectedEOF:
		// The connection's end ends the body too: later reads see io.EOF, as net/http's do,
		// and what follows is the connection's to find.
		b.err = io.EOF
		b.done.Store(true)
	case err != nil:
		b.err = err
		if errors.Is(err, h1.ErrChunked) {
			b.c.s.refusedBodies.Add(1)
		}
	}
	return n, err
}

// Close ends the handler's reading, reading what is left up to maxDiscard so that the
// connection can serve its next request, as net/http's server body does.
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	var err error
	switch {
	case b.done.Load():
	case b.chunked == nil && b.remaining > maxDiscard, b.expect100.Swap(false):
		// Too much to read, or a client still waiting for its 100 Continue: it will not send.
		b.early = true
	default:
		var n int64
		n, err = io.CopyN(io.Discard, lockedBody{b}, maxDiscard)
		if err == io.EOF {
			err = nil
		}
		if n == maxDiscard {
			b.early = true
		}
	}
	b.closed = true
	return err
}

// closedEarly: the body was closed before its end.
func (b *body) closedEarly() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.early || b.closed && !b.done.Load()
}

type lockedBody struct{ b *body }

func (l lockedBody) Read(p []byte) (int, error) { return l.b.read(p) }

// discarded is what became of a body left unread when the answer's head goes out.
type discarded uint8

const (
	discardDone   discarded = iota // read to its end: the connection stays
	discardTooBig                  // more left than the engine reads: the connection closes
	discardFailed                  // the body broke or stalled: the connection closes
)

// discard reads what the handler left of the body before its answer goes out (a client that
// sends its whole request before reading could not take the answer otherwise), up to maxDiscard
// and within timeout.
func (b *body) discard(timeout time.Duration) discarded {
	if b.done.Load() {
		return discardDone
	}
	if timeout > 0 {
		// A read still blocked in another goroutine ends by this deadline too.
		b.c.rwc.SetReadDeadline(time.Now().Add(timeout))
		defer b.c.rwc.SetReadDeadline(time.Time{})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed && !b.done.Load():
		return discardFailed
	case b.closed:
		return discardDone
	case b.chunked == nil && b.remaining >= maxDiscard:
		return discardTooBig
	}
	_, err := io.CopyN(io.Discard, lockedBody{b}, maxDiscard+1)
	switch err {
	case nil:
		return discardTooBig
	case io.EOF:
		b.closed = true
		return discardDone
	}
	return discardFailed
}
