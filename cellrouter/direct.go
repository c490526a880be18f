package cellrouter

import (
	"bytes"
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

// sendBuffers keep encoded requests' buffers between requests.
type sendBuffers struct{ pool sync.Pool }

func (s *sendBuffers) get() *encoded {
	if e, ok := s.pool.Get().(*encoded); ok {
		return e
	}
	return &encoded{bytes: make([]byte, 0, 2<<10), fields: make(outFields, 0, 16)}
}

func (s *sendBuffers) put(e *encoded) {
	if cap(e.bytes) > 64<<10 {
		return
	}
	clear(e.fields[:cap(e.fields)])
	*e = encoded{fields: e.fields[:0], bytes: e.bytes[:0]}
	s.pool.Put(e)
}

// forwardDirect sends r to the cell at ap and writes its answer to w. A connection that could
// not be made goes to the cell's next address, as the reverse proxies' transport does.
func (p *Router) forwardDirect(w *hop.Record, r *http.Request, t *target, ap *addressProxies) {
	out := p.encode(r)
	defer p.sendBuffers.put(out)
	var tried []*discovery.Address
	for {
		p.reencode(out, r, ap)
		if len(tried) > 0 {
			ap.addr.Begin()
		}
		x, err := p.inline.Exchange(r, ap.key, out.bytes)
		if len(tried) > 0 {
			ap.addr.End()
		}
		if err == nil {
			ap.addr.Answered()
			p.answerDirect(w, r, x, ap)
			return
		}
		if !p.exchangeFailed(r, t, ap, err, len(out.body) == 0) {
			p.upstreamFailed(w, r, t, err)
			return
		}
		tried = append(tried, ap.addr)
		next := t.health.Pick(tried...)
		if next == nil {
			p.upstreamFailed(w, r, t, err)
			return
		}
		ap = t.proxies(next)
	}
}

// pollDirect sends a jobs/request that may be parked and writes its answer when it began within
// the parking delay; otherwise it returns the Held to park. A job handed out (201) is read by
// the parker's reverse proxy, which learns its id and asks admission.
func (p *Router) pollDirect(w *hop.Record, r *http.Request, t *target, ap *addressProxies) *wire.Held {
	out := p.encode(r)
	defer p.sendBuffers.put(out)
	p.reencode(out, r, ap)
	x, held, err := p.polls.ExchangeOrHold(r, ap.key, out.bytes)
	switch {
	case err != nil:
		p.exchangeFailed(r, t, ap, err, false)
		p.upstreamFailed(w, r, t, err)
	case held != nil:
		return held
	case x.Accepted && x.Answer.Status == http.StatusCreated && (p.learned != nil || p.admission != nil):
		ap.resume(ap.parker, x.Held()).ServeHTTP(w, r)
	default:
		ap.addr.Answered()
		p.answerDirect(w, r, x, ap)
	}
	return nil
}

// exchangeFailed notes a failed exchange in the cell's health, as the reverse proxies'
// transport does, and says whether the request may go to another address: no connection was
// made, and it has no body to send again and is not a job claim.
func (p *Router) exchangeFailed(r *http.Request, t *target, ap *addressProxies, err error, bodiless bool) bool {
	if r.Context().Err() != nil {
		return false
	}
	if !neverReached(err) {
		if gatewayFailure(err) {
			t.health.GatewayFailed(ap.addr)
		}
		return false
	}
	t.health.ConnectFailed(ap.addr)
	return bodiless && r.URL.Path != wire.JobsRequestPath
}

// encoded is a request as edge writes it to a cell: its outgoing fields, its held body, and the
// bytes for the address it goes to.
type encoded struct {
	fields outFields
	body   []byte
	bytes  []byte
	host   string // the bytes' Host
}

func (p *Router) encode(r *http.Request) *encoded {
	e := p.sendBuffers.get()
	if r.ContentLength > 0 {
		e.body = r.Body.(*replayBody).data
	}
	outgoing(&e.fields, r)
	return e
}

// reencode writes e's bytes for ap: again only when the Host differs.
func (p *Router) reencode(e *encoded, r *http.Request, ap *addressProxies) {
	host := ap.addr.URL.Host
	if ap.preserveHost {
		host = r.Host
	}
	if e.bytes != nil && host == e.host {
		return
	}
	e.host = host
	e.bytes = appendRequest(e.bytes[:0], r, host, e.fields, e.body)
}

// answerDirect writes the cell's answer as ReverseProxy would: its head's fields but the
// hop-by-hop ones, its status, its body.
func (p *Router) answerDirect(w *hop.Record, r *http.Request, x *wire.Exchange, ap *addressProxies) {
	if !x.Accepted {
		ap.resume(ap.plain, x.Held()).ServeHTTP(w, r)
		return
	}
	copyAnswerHeader(w.Header(), &x.Answer, x.Head())
	w.WriteHeader(x.Answer.Status)
	if err := x.WriteBody(w); err != nil {
		guard.Abort(w, true) // as ReverseProxy ends an answer cut short
	}
}

// copyAnswerHeader adds the answer's fields to h, but the hop-by-hop ones. Their names and values
// point into one copy of the head (head: the buffer the fields point into).
func copyAnswerHeader(h http.Header, a *h1.Response, head []byte) {
	if len(a.Headers) == 0 {
		return
	}
	var named []string
	for _, f := range a.Headers {
		if bytes.EqualFold(f.Name, []byte("connection")) {
			named = append(named, connectionNamed([]string{string(f.Value)})...)
		}
	}
	s := string(head)
	at := func(b []byte) string {
		i := cap(head) - cap(b) // both slices of one buffer, ending where it ends
		return s[i : i+len(b)]
	}
	values := make([]string, len(a.Headers))
	for i, f := range a.Headers {
		name := textproto.CanonicalMIMEHeaderKey(at(f.Name))
		if isHopByHop(name) || slices.Contains(named, name) {
			continue
		}
		values[i] = at(f.Value)
		if old, ok := h[name]; ok {
			h[name] = append(old, values[i])
		} else {
			h[name] = values[i : i+1 : i+1]
		}
	}
}
