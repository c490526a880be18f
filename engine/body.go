package engine

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gitlab.com/edge/edge/h1"
)

// body is a request's body, read from the connection's buffer and then the connection: by its
// Content-Length, or chunked. It may be read from another goroutine than the handler's (a
// transport's), so it locks.
type body struct {
	c         *conn
	mu        sync.Mutex
	remaining int64            // by Content-Length
	chunked   *h1.ChunkedReader // nil: by Content-Length
	expect100 bool             // the client waits for 100 Continue, not yet sent
	closed    bool
	err       error       // sticky
	done      atomic.Bool // read to its end
}

func (c *conn) newBody(n int64, expect100 bool) *body {
	b := &body{c: c, remaining: n, expect100: expect100}
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

func (b *body) read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.expect100 {
		b.expect100 = false
		b.c.w.writeContinue()
	}
	var n int
	var err error
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
	if err != nil {
		b.err = err
		if err == io.EOF {
			b.done.Store(true)
		}
	}
	return n, err
}

// Close ends the handler's reading; what is left is drained after its answer.
func (b *body) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// drain reads what the handler left of the body, up to maxDiscard and within timeout, so that the
// connection can serve its next request; false: it cannot (too much left, the client never got
// its 100 Continue, the body broke or stalled), and the connection closes.
func (b *body) drain(timeout time.Duration) bool {
	if b.done.Load() {
		return true
	}
	if timeout > 0 {
		// A read still blocked in another goroutine ends by this deadline too.
		b.c.rwc.SetReadDeadline(time.Now().Add(timeout))
		defer b.c.rwc.SetReadDeadline(time.Time{})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.expect100 || b.err != nil && b.err != io.EOF || b.chunked == nil && b.remaining > maxDiscard {
		return false
	}
	var scratch [4 << 10]byte
	for read := 0; read <= maxDiscard; {
		n, err := b.read(scratch[:])
		read += n
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
