package cellrouter

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/wire"
)

// target is one cell, its health, and two reverse proxies per address: jobs/request needs a
// response-header timeout above the long poll, everything else a shorter one.
type target struct {
	cell     *discovery.Cell
	label    string
	health   *discovery.CellHealth
	addrs    []addressProxies         // parallel to health.Addrs
	counters [2][6]prometheus.Counter // by traffic kind and status class, resolved once
}

type addressProxies struct {
	plain, longPoll *httputil.ReverseProxy
	// parker sends a jobs/request that may be parked (nil when none can be: a transport given,
	// or tracing on); resume is its second pass.
	parker *httputil.ReverseProxy
	health *discovery.CellHealth
	addr   *discovery.Address
	// key is the address's host:port when edge can write its requests itself (plain HTTP, no
	// path or query of its own); empty otherwise.
	key          string
	preserveHost bool
}

// resume is rp reading, through held, the answer to a request already sent: a parked poll's
// second pass (the parker), or an answer edge left to net/http (the plain proxy).
func (ap *addressProxies) resume(rp *httputil.ReverseProxy, held *wire.Held) *httputil.ReverseProxy {
	again := *rp
	again.Transport = &addressTransport{held, ap.health, ap.addr}
	return &again
}

// proxies are the reverse proxies of one of the target's addresses.
func (t *target) proxies(a *discovery.Address) *addressProxies {
	for i, x := range t.health.Addrs {
		if x == a {
			return &t.addrs[i]
		}
	}
	return &t.addrs[0]
}

func (t *target) requests(kind TrafficKind, status int) prometheus.Counter {
	class := status / 100
	if class < 1 || class > 5 {
		class = 0
	}
	return t.counters[kind][class]
}

func (p *Router) newTargets(o Options) map[uint64]*target {
	plainTransport, longPollTransport := o.Transport, o.Transport
	var parker http.RoundTripper
	if o.Transport == nil {
		plain, longPoll := newCellTransport(o.DialTimeout, o.UpstreamTimeout), newCellTransport(o.DialTimeout, o.LongPollTimeout)
		longPoll.HoldUnbuffered()
		p.transports = []*wire.InlineTransport{plain, longPoll}
		plainTransport, longPollTransport = plain, longPoll
		if o.Tracer == nil {
			parker = longPoll.Parker()
			p.inline, p.polls = plain, longPoll
		}
	}
	p.cellTransport = plainTransport
	buffers, held := &wire.BufferPool{Size: copyBufferSize}, &wire.BufferPool{Size: heldCopyBufferSize}
	targets := make(map[uint64]*target)
	for _, cell := range p.cells.All() {
		label := strconv.FormatUint(cell.ID, 10)
		t := &target{cell: cell, label: label, health: p.health.Cell(cell.ID, cell.URLs, cell.Check)}
		for kind := range t.counters {
			for class := range t.counters[kind] {
				code := "other"
				if class > 0 {
					code = hop.CodeClass(class * 100)
				}
				t.counters[kind][class] = p.metrics.Requests.WithLabelValues(TrafficKind(kind).String(), label, code)
			}
		}
		cellAttr := func(*http.Request) []attribute.KeyValue {
			return []attribute.KeyValue{attribute.Int64("edge.cell", int64(cell.ID))}
		}
		for _, a := range t.health.Addrs {
			plain := o.Tracer.Transport(&addressTransport{plainTransport, t.health, a}, "cell "+label, cellAttr)
			longPoll := o.Tracer.Transport(&addressTransport{longPollTransport, t.health, a}, "cell "+label, cellAttr)
			ap := addressProxies{
				plain:    p.reverseProxy(t, a.URL, label, plain, buffers, false),
				longPoll: p.reverseProxy(t, a.URL, label, longPoll, held, true),
				health:   t.health, addr: a,
				key: directKey(a.URL), preserveHost: cell.PreserveHost,
			}
			if parker != nil {
				ap.parker = p.reverseProxy(t, a.URL, label, &addressTransport{parker, t.health, a}, held, true)
			}
			t.addrs = append(t.addrs, ap)
		}
		targets[cell.ID] = t
	}
	return targets
}

// CloseIdleConnections closes the idle upstream connections of a proxy a config reload
// replaced; those in use finish their requests.
func (p *Router) CloseIdleConnections() {
	for _, t := range p.transports {
		t.CloseIdleConnections()
	}
}

func newCellTransport(dialTimeout, responseHeaderTimeout time.Duration) *wire.InlineTransport {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return wire.NewInlineTransport(wire.NewTransport(dialer, dialTimeout, responseHeaderTimeout))
}

func (p *Router) reverseProxy(t *target, addr *url.URL, label string, transport http.RoundTripper, buffers httputil.BufferPool, jobAnswers bool) *httputil.ReverseProxy {
	cell := t.cell
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(addr)
			// ReverseProxy hides the body behind its own wrapper; a body edge already holds
			// whole is handed on as is, so the cell transport can send it inline.
			if b, ok := pr.In.Body.(*replayBody); ok && b.whole != nil && pr.Out.Body != nil {
				pr.Out.Body = b
			}
			if cell.PreserveHost {
				pr.Out.Host = pr.In.Host
			}
			hop.SetForwarded(pr)
		},
		Transport:  transport,
		BufferPool: buffers,
		ErrorLog:   nil,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if held := wire.HeldOf(err); held != nil {
				if pw, ok := w.(*pollWriter); ok {
					pw.held = held // sent and held by the cell: pollJob parks it
					return
				}
				held.Close()
			}
			p.upstreamFailed(w, r, t, err)
		},
	}
	if jobAnswers && (p.learned != nil || p.admission != nil) {
		rp.ModifyResponse = func(resp *http.Response) error { return p.jobAnswer(t, resp) }
	}
	return rp
}

// upstreamFailed answers a request whose cell gave no answer, with the status and cause of err.
func (p *Router) upstreamFailed(w http.ResponseWriter, r *http.Request, t *target, err error) {
	if r.Context().Err() != nil {
		err = r.Context().Err()
	}
	status, cause := hop.StatusOf(err)
	p.metrics.upstreamErrors.WithLabelValues(t.label, cause).Inc()
	if status == hop.StatusClientClosed {
		p.log.Info("client went away; upstream request canceled", "cell", t.cell.ID, "path", r.URL.Path,
			"request_id", r.Header.Get(hop.HeaderRequestID))
	} else {
		p.log.Warn("upstream request failed", "cell", t.cell.ID, "method", r.Method, "path", r.URL.Path,
			"status", status, "cause", cause, "request_id", r.Header.Get(hop.HeaderRequestID), "error", err)
	}
	hop.Write(w, status, cause, "cell "+t.label+": "+hop.CauseText(cause))
}

// directKey is the host:port edge writes an address's requests to itself, or "" when the
// address needs what ReverseProxy does (TLS, a path or query to join, credentials).
func directKey(u *url.URL) string {
	if u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Opaque != "" ||
		u.Path != "" && u.Path != "/" || u.RawPath != "" || u.Port() == "" {
		return ""
	}
	return u.Host // the inline transport's key for the address, as ReverseProxy's requests have it
}

// maxJobAnswerPeek bounds how much of a job answer edge reads to find its id; GitLab puts the
// id first, so a few bytes normally suffice.
const maxJobAnswerPeek = 64 << 10

// learnJob remembers which cell handed out the job in a 201 answer to jobs/request, so later
// requests for that job id find the cell even when the id is outside every configured range.
func (p *Router) learnJob(cell *discovery.Cell, resp *http.Response) {
	if resp.StatusCode != http.StatusCreated || resp.Body == nil {
		return
	}
	var buf bytes.Buffer
	chunk := make([]byte, 4<<10)
	var id uint64
	var found bool
	for buf.Len() < maxJobAnswerPeek {
		n, err := resp.Body.Read(chunk)
		buf.Write(chunk[:n])
		if id, found = topLevelUint(buf.Bytes(), "id"); found || err != nil {
			break
		}
	}
	resp.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(buf.Bytes()), resp.Body), closer: resp.Body}
	if found && id > 0 {
		p.learned.Learn(id, cell.ID)
		p.metrics.learnedJobs.Inc()
	}
}

const copyBufferSize = 32 << 10

// heldCopyBufferSize is the copy buffer of long polls' answers: ReverseProxy takes one for every
// answer, even an empty 204, and thousands of held polls are answered at once when a cell
// releases them; their answers are small (a job's JSON at most).
const heldCopyBufferSize = 4 << 10
