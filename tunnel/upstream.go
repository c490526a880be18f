package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// AllowPorts maps each port to 127.0.0.1:<port>, the default upstream of an agent.
func AllowPorts(ports ...int) map[int]string {
	m := make(map[int]string, len(ports))
	for _, p := range ports {
		m[p] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return m
}

type upstreamKey struct{}

// upstreamHandler serves the requests that arrive through the tunnel: it checks the port the
// request names against the allow-list and proxies it there, without the edge's headers.
type upstreamHandler struct {
	upstreams  map[int]string
	splice     bool // splice streams are offered
	buffers    *BufferPool
	proxy      *httputil.ReverseProxy
	log        *slog.Logger
	metrics    *agentMetrics
	writeError ErrorWriter
	removeEdge func(http.Header)
	guard      *guard.Guard
}

func newUpstreamHandler(o AgentOptions, m *agentMetrics) *upstreamHandler {
	h := &upstreamHandler{upstreams: o.Upstreams, splice: !o.PerRequest, buffers: &BufferPool{}, log: o.Logger, metrics: m,
		writeError: o.WriteError, removeEdge: o.RemoveEdgeHeaders, guard: o.Guard}
	base := &http.Transport{
		Proxy:                 nil, // upstreams are local: never through an environment proxy
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	var transport http.RoundTripper = base
	if o.WrapTransport != nil {
		transport = o.WrapTransport(base)
	}
	h.proxy = &httputil.ReverseProxy{
		Rewrite:      h.rewrite,
		Transport:    transport,
		BufferPool:   h.buffers,
		ErrorHandler: h.upstreamError,
		ModifyResponse: func(*http.Response) error {
			h.metrics.requests.WithLabelValues("ok").Inc() // the upstream answered
			return nil
		},
		ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	return h
}

func (h *upstreamHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.metrics.streams.Inc()
	defer h.metrics.streams.Dec()
	port, ok := parsePort(r.Header.Get(PortHeader))
	if !ok {
		h.metrics.requests.WithLabelValues("bad_request").Inc()
		h.writeError(w, http.StatusBadRequest, "bad_request", "missing or bad "+PortHeader+" header")
		return
	}
	addr, ok := h.upstreams[port]
	if !ok {
		h.metrics.requests.WithLabelValues("forbidden").Inc()
		h.writeError(w, http.StatusForbidden, "port_not_allowed", fmt.Sprintf("port %d is not allowed by the agent", port))
		return
	}
	if headerHasToken(r.Header, "Connection", "upgrade") {
		switch {
		case headerHasToken(r.Header, "Upgrade", TCPUpgradeToken):
			h.serveRaw(w, r, addr, TCPUpgradeToken, "tcp")
			return
		case headerHasToken(r.Header, "Upgrade", SpliceUpgradeToken):
			if !h.splice {
				h.metrics.requests.WithLabelValues("bad_request").Inc()
				h.writeError(w, http.StatusBadRequest, "bad_request", "this agent serves each request itself: it offers no splice stream")
				return
			}
			h.serveRaw(w, r, addr, SpliceUpgradeToken, "splice")
			return
		}
		w = endsWithEdge{w}
	}
	// A write of the answer blocked on the stream's window waits for the edge to read, which it
	// never will once it has closed its end (its client went away): r's context ends then, and
	// fails the write, so that the upstream request is cancelled rather than held until the
	// stream's close times out.
	// guard: only sets a deadline
	stop := context.AfterFunc(r.Context(), func() { _ = http.NewResponseController(w).SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	h.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), upstreamKey{}, addr)))
}

// serveRaw switches the stream to a raw TCP connection to addr (edge-tcp: SSH; edge-splice: the
// edge's keep-alive connection to the upstream): the answer is 101, then the bytes of both ways,
// until either side closes. A refusal is what the per-request path answers.
func (h *upstreamHandler) serveRaw(w http.ResponseWriter, r *http.Request, addr, token, label string) {
	up, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(r.Context(), "tcp", addr)
	if err != nil {
		h.metrics.requests.WithLabelValues("upstream_error").Inc()
		h.log.Info("upstream connect failed", "upstream", addr, "error", err)
		h.writeError(w, http.StatusBadGateway, "upstream_unreachable", "agent could not reach its upstream")
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		h.writeError(w, http.StatusInternalServerError, "error", "the stream cannot be taken over")
		return
	}
	h.metrics.requests.WithLabelValues(label).Inc()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + token + "\r\n\r\n")
	if err := brw.Flush(); err != nil {
		conn.Close()
		up.Close()
		return
	}
	var buffered []byte
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ = brw.Reader.Peek(n)
	}
	Relay(conn, up, buffered, h.buffers, h.guard)
}

func (h *upstreamHandler) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the edge (its client) went away: nobody to answer
	}
	h.metrics.requests.WithLabelValues("upstream_error").Inc()
	h.log.Info("upstream request failed", "upstream", r.Context().Value(upstreamKey{}), "error", err)
	h.writeError(w, http.StatusBadGateway, "upstream_unreachable", "agent could not reach its upstream")
}

func (h *upstreamHandler) rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = pr.In.Context().Value(upstreamKey{}).(string)
	// The Host header stays the one the client sent. X-Forwarded-* were set by the edge, which is
	// trusted here: keep them (ReverseProxy removes them before Rewrite).
	for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
	h.removeEdge(pr.Out.Header)
	pr.Out.Header.Del("Authorization")
}

// parsePort accepts 1 to 65535 in plain decimal.
func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	p, err := strconv.Atoi(s)
	if err != nil || p > 65535 {
		return 0, false
	}
	return p, true
}
