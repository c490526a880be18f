package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"gitlab.com/edge/edge/discovery"
)

// target is one cell, its health, and two reverse proxies per address: jobs/request needs a
// response-header timeout above the long poll, everything else a shorter one.
type target struct {
	cell     *discovery.Cell
	health   *discovery.CellHealth
	addrs    []addressProxies         // parallel to health.Addrs
	counters [2][6]prometheus.Counter // by traffic kind and status class, resolved once
}

type addressProxies struct {
	plain, longPoll *httputil.ReverseProxy
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

func (p *Proxy) newTargets(o Options) map[uint64]*target {
	plainTransport, longPollTransport := o.Transport, o.Transport
	if o.Transport == nil {
		plain, longPoll := newCellTransport(o.DialTimeout, o.UpstreamTimeout), newCellTransport(o.DialTimeout, o.LongPollTimeout)
		longPoll.holdUnbuffered = true
		p.transports = []*InlineTransport{plain, longPoll}
		plainTransport, longPollTransport = plain, longPoll
	}
	p.cellTransport = plainTransport
	buffers, held := &bufferPool{size: copyBufferSize}, &bufferPool{size: heldCopyBufferSize}
	targets := make(map[uint64]*target)
	for _, cell := range p.cells.All() {
		t := &target{cell: cell, health: p.health.Cell(cell.ID, cell.URLs, cell.Check)}
		label := strconv.FormatUint(cell.ID, 10)
		for kind := range t.counters {
			for class := range t.counters[kind] {
				code := "other"
				if class > 0 {
					code = codeClass(class * 100)
				}
				t.counters[kind][class] = p.metrics.requests.WithLabelValues(TrafficKind(kind).String(), label, code)
			}
		}
		cellAttr := func(*http.Request) []attribute.KeyValue {
			return []attribute.KeyValue{attribute.Int64("edge.cell", int64(cell.ID))}
		}
		for _, a := range t.health.Addrs {
			plain := o.Tracer.Transport(&addressTransport{plainTransport, t.health, a}, "cell "+label, cellAttr)
			longPoll := o.Tracer.Transport(&addressTransport{longPollTransport, t.health, a}, "cell "+label, cellAttr)
			t.addrs = append(t.addrs, addressProxies{
				plain:    p.reverseProxy(t, a.URL, label, plain, buffers, false),
				longPoll: p.reverseProxy(t, a.URL, label, longPoll, held, true),
			})
		}
		targets[cell.ID] = t
	}
	return targets
}

// CloseIdleConnections closes the idle upstream connections of a proxy a config reload
// replaced; those in use finish their requests.
func (p *Proxy) CloseIdleConnections() {
	for _, t := range p.transports {
		t.CloseIdleConnections()
	}
}

func newCellTransport(dialTimeout, responseHeaderTimeout time.Duration) *InlineTransport {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return NewInlineTransport(newTransport(dialer, dialTimeout, responseHeaderTimeout))
}

func newTransport(dialer *net.Dialer, dialTimeout, responseHeaderTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   dialTimeout,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: responseHeaderTimeout,
		// Bodies pass through as the cell sent them; the transport must not ask for gzip on
		// the client's behalf and inflate the answer.
		DisableCompression: true,
	}
}

func (p *Proxy) reverseProxy(t *target, addr *url.URL, label string, transport http.RoundTripper, buffers httputil.BufferPool, jobAnswers bool) *httputil.ReverseProxy {
	cell := t.cell
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(addr)
			// ReverseProxy hides the body behind its own wrapper; a body edge already holds
			// whole is handed on as is, so the cell transport can send it inline.
			if b, ok := pr.In.Body.(*replayBody); ok && b.inMemory && pr.Out.Body != nil {
				pr.Out.Body = b
			}
			if cell.PreserveHost {
				pr.Out.Host = pr.In.Host
			}
			setForwarded(pr)
		},
		Transport:  transport,
		BufferPool: buffers,
		ErrorLog:   nil,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, errParked) {
				return // sent; the answer is read when the cell gives it
			}
			if r.Context().Err() != nil {
				err = r.Context().Err()
			}
			status, cause := statusOf(err)
			p.metrics.upstreamErrors.WithLabelValues(label, cause).Inc()
			if status == statusClientClosed {
				p.log.Info("client went away; upstream request canceled", "cell", cell.ID, "path", r.URL.Path,
					"request_id", r.Header.Get(HeaderRequestID))
			} else {
				p.log.Warn("upstream request failed", "cell", cell.ID, "method", r.Method, "path", r.URL.Path,
					"status", status, "cause", cause, "request_id", r.Header.Get(HeaderRequestID), "error", err)
			}
			WriteError(w, status, cause, "cell "+label+": "+causeText(cause))
		},
	}
	if jobAnswers && (p.learned != nil || p.admission != nil) {
		rp.ModifyResponse = func(resp *http.Response) error { return p.jobAnswer(t, resp) }
	}
	return rp
}

// setForwarded sets X-Forwarded-* and X-Real-Ip from edge's own view. The front has already
// removed an untrusted peer's forwarding headers, so any left on the incoming request come from
// a trusted proxy (or another edge): its chain is extended, its host, proto and client address
// kept. ReverseProxy has removed Forwarded and X-Forwarded-{For,Host,Proto} from the outgoing
// request before Rewrite.
func setForwarded(pr *httputil.ProxyRequest) {
	in := pr.In.Header
	for _, k := range [...]string{"X-Forwarded-For", "Forwarded"} {
		if v, ok := in[k]; ok {
			pr.Out.Header[k] = v
		}
	}
	pr.SetXForwarded()
	for _, k := range [...]string{"X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := in[k]; ok {
			pr.Out.Header[k] = v
		}
	}
	if _, ok := in["X-Real-Ip"]; ok {
		return
	}
	if ip, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
		pr.Out.Header.Set("X-Real-Ip", ip)
	} else {
		pr.Out.Header.Del("X-Real-Ip")
	}
}

// maxJobAnswerPeek bounds how much of a job answer edge reads to find its id; GitLab puts the
// id first, so a few bytes normally suffice.
const maxJobAnswerPeek = 64 << 10

// learnJob remembers which cell handed out the job in a 201 answer to jobs/request, so later
// requests for that job id find the cell even when the id is outside every configured range.
func (p *Proxy) learnJob(cell *discovery.Cell, resp *http.Response) {
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

// bufferPool hands ReverseProxy copy buffers of one size. It pools each buffer's first byte's
// address, not the slice: a pointer goes into a sync.Pool without an allocation, a slice header
// does not.
type bufferPool struct {
	size int
	pool sync.Pool
}

func (b *bufferPool) Get() []byte {
	if p, ok := b.pool.Get().(*byte); ok {
		return unsafe.Slice(p, b.size)
	}
	return make([]byte, b.size)
}

func (b *bufferPool) Put(v []byte) {
	if len(v) == b.size && cap(v) == b.size {
		b.pool.Put(unsafe.SliceData(v))
	}
}
