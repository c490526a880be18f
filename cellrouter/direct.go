package cellrouter

import (
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"sync"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/h1"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/wire"
)

// A plain request edge can write itself goes to its cell without ReverseProxy: its head encoded
// once into a pooled buffer, written on an inline connection with its body, the answer's head
// read in place (h1.ParseResponse) and its body copied from the connection's buffer to the
// client. The client sees what ReverseProxy would have written, and the cell what it would
// have sent. An answer outside h1's subset is read by net/http after all, through a Held.

// direct says whether edge writes r to the cell at ap itself.
func (p *Router) direct(ap *addressProxies, r *http.Request) bool {
	if p.inline == nil || ap.key == "" || len(r.TransferEncoding) > 0 || r.ContentLength < 0 ||
		r.URL.Opaque != "" || !strings.HasPrefix(r.URL.Path, "/") || r.Method == http.MethodConnect ||
		!cleanQuery(r.URL.RawQuery) {
		return false
	}
	if _, ok := r.Header["Expect"]; ok {
		return false
	}
	if _, ok := r.Header["Upgrade"]; ok {
		return false
	}
	if ap.preserveHost && !plainHost(r.Host) {
		return false
	}
	if r.ContentLength > 0 {
		b, ok := r.Body.(*replayBody)
		return ok && b.data != nil && int64(len(b.data)) == r.ContentLength
	}
	return true
}

// plainHost: a Host that Request.Write sends as it is (ASCII, no IPv6 zone).
func plainHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return false
		}
	}
	return h != ""
}

// sendBuffers are the encoded requests' buffers.
type sendBuffers struct{ pool sync.Pool }

func (s *sendBuffers) get() *[]byte {
	if b, ok := s.pool.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 2<<10)
	return &b
}

func (s *sendBuffers) put(b *[]byte) {
	if cap(*b) <= 64<<10 {
		*b = (*b)[:0]
		s.pool.Put(b)
	}
}

// forwardDirect sends r to the cell at ap and writes its answer to w. A connection that could
// not be made goes to the cell's next address, as the reverse proxies' transport does.
func (p *Router) forwardDirect(w *hop.Record, r *http.Request, t *target, ap *addressProxies) {
	var body []byte
	if r.ContentLength > 0 {
		body = r.Body.(*replayBody).data
	}
	var f outFields
	outgoing(&f, r)
	buf := p.sendBuffers.get()
	defer p.sendBuffers.put(buf)
	var tried []*discovery.Address
	for {
		host := ap.addr.URL.Host
		if ap.preserveHost {
			host = r.Host
		}
		*buf = appendRequest((*buf)[:0], r, host, f, body)
		if len(tried) > 0 {
			ap.addr.Begin()
		}
		x, err := p.inline.Exchange(r, ap.key, *buf)
		if len(tried) > 0 {
			ap.addr.End()
		}
		if err == nil {
			ap.addr.Answered()
			p.answerDirect(w, r, x, ap)
			return
		}
		ctxErr := r.Context().Err() != nil
		if !ctxErr && !neverReached(err) && gatewayFailure(err) {
			t.health.GatewayFailed(ap.addr)
		}
		if ctxErr || !neverReached(err) || len(body) > 0 || r.URL.Path == wire.JobsRequestPath {
			p.upstreamFailed(w, r, t, err)
			return
		}
		t.health.ConnectFailed(ap.addr)
		tried = append(tried, ap.addr)
		next := t.health.Pick(tried...)
		if next == nil {
			p.upstreamFailed(w, r, t, err)
			return
		}
		ap = t.proxies(next)
	}
}

// answerDirect writes the cell's answer as ReverseProxy would: its head's fields but the
// hop-by-hop ones, its status, its body.
func (p *Router) answerDirect(w *hop.Record, r *http.Request, x *wire.Exchange, ap *addressProxies) {
	if !x.Accepted {
		ap.resumePlain(x.Held()).ServeHTTP(w, r)
		return
	}
	copyAnswerHeader(w.Header(), &x.Answer)
	w.WriteHeader(x.Answer.Status)
	if err := x.WriteBody(w); err != nil {
		guard.Abort(w, true) // as ReverseProxy ends an answer cut short
	}
}

// copyAnswerHeader adds the answer's fields to h, but the hop-by-hop ones. Their names and values
// share one string.
func copyAnswerHeader(h http.Header, a *h1.Response) {
	if len(a.Headers) == 0 {
		return
	}
	var named []string
	size := 0
	for _, f := range a.Headers {
		size += len(f.Name) + len(f.Value)
		if h1Fold(f.Name, "connection") {
			named = append(named, connectionNamed([]string{string(f.Value)})...)
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	for _, f := range a.Headers {
		sb.Write(f.Name)
		sb.Write(f.Value)
	}
	s := sb.String()
	values := make([]string, len(a.Headers))
	at := 0
	for i, f := range a.Headers {
		name := s[at : at+len(f.Name)]
		at += len(f.Name)
		values[i] = s[at : at+len(f.Value)]
		at += len(f.Value)
		name = textproto.CanonicalMIMEHeaderKey(name)
		if isHopByHop(name) || slices.Contains(named, name) {
			continue
		}
		if old, ok := h[name]; ok {
			h[name] = append(old, values[i])
		} else {
			h[name] = values[i : i+1 : i+1]
		}
	}
}

// h1Fold compares a field name with a lower-case one, ASCII case aside.
func h1Fold(name []byte, lower string) bool {
	if len(name) != len(lower) {
		return false
	}
	for i := range name {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
