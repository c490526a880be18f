package h1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"sync"
	"time"
)

// reading is what net/http's server made of a connection's first bytes: whether its handler ran,
// and what the request it got said.
type reading struct {
	accepted      bool
	method        string
	target        string
	host          string
	header        http.Header
	contentLength int64
	chunked       bool
	close         bool
	body          []byte
	bodyErr       error
}

// netHTTP serves raw, as the bytes a client sent on a new connection, with a real http.Server,
// and returns what its handler saw of each request, in order (none: it refused the first).
func netHTTP(raw []byte, maxHeaderBytes int) []reading {
	conn := &fakeConn{r: bytes.NewReader(raw), closed: make(chan struct{})}
	var mu sync.Mutex
	var got []reading
	srv := &http.Server{
		MaxHeaderBytes: maxHeaderBytes,
		ReadTimeout:    5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rd := reading{accepted: true, method: r.Method, target: r.RequestURI, host: r.Host, header: r.Header.Clone(),
				contentLength: r.ContentLength, close: r.Close,
				chunked: len(r.TransferEncoding) == 1 && r.TransferEncoding[0] == "chunked"}
			rd.body, rd.bodyErr = io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, rd)
			mu.Unlock()
		}),
	}
	ln := &oneConnListener{c: conn, done: make(chan struct{})}
	go srv.Serve(ln)
	<-conn.closed
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	return got
}

// fakeConn reads raw, then EOF; what the server writes is dropped.
type fakeConn struct {
	r         *bytes.Reader
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *fakeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *fakeConn) Close() error                { c.closeOnce.Do(func() { close(c.closed) }); return nil }
func (c *fakeConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
func (c *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fakeConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener yields one connection, then waits to be closed.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	used bool
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	used := l.used
	l.used = true
	l.mu.Unlock()
	if !used {
		return l.c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// engineReads is what the engine makes of a connection's bytes: each request it accepts, in
// order, with the body it frames, until one it hands off, one whose body it cannot read whole,
// or one after which the connection closes.
func engineReads(raw []byte, l Limits) []reading {
	var out []reading
	for len(raw) > 0 {
		var r Request
		n, v := Parse(raw, &r, l)
		if v != Accept {
			return out
		}
		rd := reading{accepted: true, method: string(r.Method), target: string(r.Target), host: string(r.Host),
			header: headerOf(&r), chunked: r.Chunked, close: r.Close}
		rest := raw[n:]
		switch {
		case r.Chunked:
			cr := &countingReader{r: bytes.NewReader(rest)}
			br := bufio.NewReader(cr)
			rd.body, rd.bodyErr = io.ReadAll(NewChunkedReader(br))
			rest = rest[cr.n-br.Buffered():]
		case r.ContentLength > int64(len(rest)):
			rd.body, rd.bodyErr = rest, io.ErrUnexpectedEOF
		case r.ContentLength > 0:
			rd.body, rest = rest[:r.ContentLength], rest[r.ContentLength:]
		}
		out = append(out, rd)
		if rd.bodyErr != nil || r.Close {
			return out
		}
		raw = rest
	}
	return out
}

// countingReader counts what was read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// headerOf is the engine's header fields as net/http's server keeps them: canonical names, Host
// and Transfer-Encoding taken out.
func headerOf(r *Request) http.Header {
	h := http.Header{}
	for _, f := range r.Headers {
		k := textproto.CanonicalMIMEHeaderKey(string(f.Name))
		if k == "Host" || k == "Transfer-Encoding" {
			continue
		}
		h[k] = append(h[k], string(f.Value))
	}
	return h
}
