package engine

import (
	"context"
	"net/http"
	"net/textproto"
	"net/url"
	"time"
)

// outcome is what a served request leaves of its connection.
type outcome uint8

const (
	keepOpen outcome = iota
	closeAfter
	hijacked
)

// maxDiscard is how much of a body its handler left unread the engine reads to keep the
// connection (net/http's figure); more, and the connection closes instead.
const maxDiscard = 256 << 10

// serveRequest serves r, read from the connection; cancel ends r's context.
func (c *conn) serveRequest(r *http.Request, cancel context.CancelFunc) outcome {
	c.served++
	c.lastPOST = r.Method == http.MethodPost
	if r.Body != http.NoBody {
		c.rwc.SetReadDeadline(time.Time{}) // the handler reads the body within its own time
	} // else the idle deadline stays: only the watch reads, and clears it first
	defer cancel()
	w := &c.w
	w.reset(c, r)
	c.watcher.arm(cancel, w.body)
	c.s.handler.ServeHTTP(w, r)
	if w.hijacked {
		return hijacked
	}
	c.watcher.disarm()
	if !w.finish() || c.watcher.gone || c.s.draining.Load() {
		if w.lingerClose {
			c.closeWriteAndWait()
		}
		return closeAfter
	}
	return keepOpen
}

// request makes the http.Request of the head (the buffer's first n bytes, taken out of it), with
// ctx, as net/http's server makes it: the strings in one allocation, Host out of the header map,
// Transfer-Encoding read into the request's fields.
func (c *conn) request(ctx context.Context, n int) (*http.Request, error) {
	head := &c.head
	raw, _ := c.br.Peek(n)
	s := string(raw) // every string of the request points into this one
	at := func(b []byte) string {
		if len(b) == 0 {
			return ""
		}
		i := cap(raw) - cap(b) // both slices of one buffer, ending where it ends
		return s[i : i+len(b)]
	}
	target := at(head.Target)
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, err
	}
	// Made here and copied once with its context (WithContext): this one stays on the stack.
	r := &http.Request{
		Method:     at(head.Method),
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: head.Minor,
		Header:     make(http.Header, len(head.Headers)),
		Host:       at(head.Host),
		RemoteAddr: c.remote,
		RequestURI: target,
		Close:      head.Close,
		TLS:        c.tls,
	}
	if head.Minor == 0 {
		r.Proto = "HTTP/1.0"
	}
	values := make([]string, len(head.Headers))
	for i, h := range head.Headers {
		name := textproto.CanonicalMIMEHeaderKey(at(h.Name))
		switch name {
		case "Host", "Transfer-Encoding":
			continue
		}
		values[i] = at(h.Value)
		if old, ok := r.Header[name]; ok {
			r.Header[name] = append(old, values[i])
		} else {
			r.Header[name] = values[i : i+1 : i+1]
		}
	}
	c.br.Discard(n)
	switch {
	case head.Chunked:
		r.ContentLength = -1
		r.TransferEncoding = []string{"chunked"}
		r.Body = c.newBody(-1, head.Expect100)
	case head.ContentLength > 0:
		r.ContentLength = head.ContentLength
		r.Body = c.newBody(head.ContentLength, head.Expect100)
	default:
		r.Body = http.NoBody
	}
	return r.WithContext(ctx), nil
}

// rstAvoidanceDelay is how long a connection closed with a body unread stays half open, as
// net/http's does: closing at once would reset it, and the client's TCP drop the answer unread.
const rstAvoidanceDelay = 500 * time.Millisecond

// closeWriteAndWait ends the connection's sending side and waits before the close.
func (c *conn) closeWriteAndWait() {
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	time.Sleep(rstAvoidanceDelay)
}
