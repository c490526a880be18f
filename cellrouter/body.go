package cellrouter

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"gitlab.com/edge/edge/hop"
)

// bodyPrefix is what edge read of a request body to find a token. When complete is false the
// body goes on past the prefix and is still unread.
type bodyPrefix struct {
	data     []byte
	complete bool
}

// prefixPool holds scratch buffers of limit+1 bytes, so reading a prefix allocates only a copy
// the size of the body actually read.
type prefixPool struct {
	limit int64
	pool  sync.Pool
}

func newPrefixPool(limit int64) *prefixPool {
	p := &prefixPool{limit: limit}
	p.pool.New = func() any {
		b := make([]byte, limit+1)
		return &b
	}
	return p
}

// read reads at most limit+1 bytes of the body, under a deadline so a client trickling its body
// cannot hold a handler forever.
func (p *prefixPool) read(w http.ResponseWriter, r *http.Request, timeout time.Duration) (bodyPrefix, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return bodyPrefix{complete: true}, nil
	}
	if timeout > 0 && w != nil {
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
			defer rc.SetReadDeadline(time.Time{})
		}
	}
	bufp := p.pool.Get().(*[]byte)
	defer p.pool.Put(bufp)
	buf := *bufp
	n, err := io.ReadFull(r.Body, buf)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		return bodyPrefix{data: bytes.Clone(buf[:n]), complete: true}, nil
	case nil:
		return bodyPrefix{data: bytes.Clone(buf[:n])}, nil
	default:
		return bodyPrefix{}, fmt.Errorf("%w: %w", hop.ErrBodyRead, err)
	}
}

// replay puts the bytes already read back in front of the rest of the body, so the cell receives
// the body byte for byte; ContentLength and TransferEncoding are left as the client sent them.
func replay(r *http.Request, prefix bodyPrefix) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	if prefix.complete {
		r.Body = wholeBody(prefix.data, r.Body)
		return
	}
	r.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(prefix.data), r.Body), closer: r.Body}
}

type replayBody struct {
	io.Reader
	closer io.Closer
	// whole is the Reader when the whole body is in memory, so sending it never waits on the
	// client (a wire.MemoryBody); nil otherwise.
	whole *bytes.Reader
	data  []byte // the whole body, when whole
}

// wholeBody is a body held whole in memory.
func wholeBody(data []byte, closer io.Closer) *replayBody {
	r := bytes.NewReader(data)
	return &replayBody{Reader: r, closer: closer, whole: r, data: data}
}

func (b *replayBody) Close() error { return b.closer.Close() }

func (b *replayBody) Whole() *bytes.Reader { return b.whole }

// holdSmallBody reads a body of known length up to the prefix limit whole before it is sent on,
// as nginx buffers request bodies: the cell transport then writes request and body in one go on
// the handler's goroutine, instead of streaming it through http.Transport's connection
// goroutines (the cost of a small POST). A body already read, of unknown length, larger, or
// awaited with Expect: 100-continue streams as it comes.
func (p *Router) holdSmallBody(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength <= 0 || r.ContentLength > p.prefixes.limit {
		return nil
	}
	if _, read := r.Body.(*replayBody); read || r.Header.Get("Expect") != "" {
		return nil
	}
	prefix, err := p.prefixes.read(w, r, p.bodyReadTimeout)
	if err != nil {
		return err
	}
	replay(r, prefix)
	return nil
}
