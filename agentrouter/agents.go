package agentrouter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/tracing"
	"gitlab.com/edge/edge/tunnel"
	"gitlab.com/edge/edge/wire"
)

// Tunnels are this edge's own agent connections.
type Tunnels interface {
	// Transport reaches agentID over any of its local connections, nil when there is none.
	Transport(agentID string) http.RoundTripper
	// ConnTransport reaches one named local connection, nil when it is not here.
	ConnTransport(agentID, connectionID string) http.RoundTripper
	// Splice opens a raw stream to port on the agent (a splice stream, see tunnel.Server.Splice)
	// over the named connection or any: for another edge's spliced connection.
	Splice(ctx context.Context, agentID, connectionID string, port int) (net.Conn, error)
}

// AgentQuerier says which edges hold an agent.
type AgentQuerier interface {
	Lookup(ctx context.Context, agentID string) ([]registry.ConnInfo, error)
	ByProject(ctx context.Context, projectID string) ([]registry.ConnInfo, error)
	Wait(ctx context.Context, agentID string) ([]registry.ConnInfo, error)
	Forget(ctx context.Context, stale registry.ConnInfo) error
}

// InternalMinter signs the short-lived JWT an edge presents to another edge's internal listener.
type InternalMinter interface {
	Mint(agentID string, now time.Time) (string, error)
}

// AgentTarget is where a request for an agent goes.
type AgentTarget struct {
	AgentID      string
	ConnectionID string // empty: any connection
	Port         int
	Path         string // the path the upstream sees, decoded
	RawPath      string // and as it was sent (empty: Path has no escapes worth keeping)
}

type AgentRouterOptions struct {
	Self     string // this edge's advertise_internal URL
	Tunnels  Tunnels
	Registry AgentQuerier
	Minter   InternalMinter    // nil: no edge-to-edge forwarding
	Peers    http.RoundTripper // transport to other edges' internal listeners; nil: built here
	// PeerPrefixes are the addresses the built transport may dial (internal.peers).
	PeerPrefixes []netip.Prefix
	// PeerTLS verifies holders whose internal URL is https:// (nil: the system roots).
	PeerTLS *tls.Config
	Wait    time.Duration // how long a request waits for the agent (default 20 s)
	// HolderCache is how long the entry edge reuses a registry answer naming other holders
	// (default 1 s; negative: never). A stale answer costs one "not here" and a fresh lookup.
	HolderCache time.Duration
	Draining    <-chan struct{} // closed when the edge drains: waiting requests get 503
	Log         *slog.Logger
	Registerer  prometheus.Registerer
	Tracer      *tracing.Tracer // client spans down the tunnel and to peers; nil: none
	Guard       *guard.Guard    // the router's goroutines (relays, dials); nil: not counted
}

// AgentRouter sends requests to agents: through a local tunnel, or to the edge that holds one.
type AgentRouter struct {
	o       AgentRouterOptions
	holders *lru.Cache[string, cachedHolders]
	local   *httputil.ReverseProxy
	remote  *httputil.ReverseProxy
	metrics *agentMetrics
	buffers *tunnel.BufferPool

	// Edge to edge over spliced connections (splice.go).
	spliced      *httputil.ReverseProxy
	peerSplices  *wire.InlineTransport
	spliceMaxAge time.Duration // peerSpliceMaxAge
	spliceSweep  time.Duration // peerSpliceSweep
	peerDialer   *net.Dialer
	noSplice     *lru.Cache[string, time.Time] // holder+" "+agent: answered "no splice" until then
	holderNames  sync.Map                      // holder URL: short name for pool keys
	holderSeq    atomic.Uint64
	// spliceTraffic: a request went over a spliced connection since the last sweep, which is
	// scheduled while sweepArmed.
	spliceTraffic, sweepArmed atomic.Bool
	relays                    sync.WaitGroup // the splices served for other edges (serveSplice)
}

func NewAgentRouter(o AgentRouterOptions) (*AgentRouter, error) {
	if o.Tunnels == nil || o.Registry == nil {
		return nil, errors.New("agentrouter: the router needs tunnels and a registry")
	}
	if o.Wait <= 0 {
		o.Wait = 20 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Peers == nil {
		o.Peers = wire.NewInlineTransport(newPeerTransport(o.PeerPrefixes, 5*time.Second, o.PeerTLS))
	}
	if o.HolderCache == 0 {
		o.HolderCache = time.Second
	}
	m, err := newAgentMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	cache, err := lru.New[string, cachedHolders](holderCacheSize)
	if err != nil {
		return nil, err
	}
	noSplice, err := lru.New[string, time.Time](holderCacheSize)
	if err != nil {
		return nil, err
	}
	// Large copy buffers make large tunnel frames (see tunnel.CopyBufferSize).
	buffers := &tunnel.BufferPool{}
	a := &AgentRouter{o: o, metrics: m, holders: cache, buffers: buffers, noSplice: noSplice,
		peerDialer: newPeerDialer(o.PeerPrefixes, 5*time.Second), spliceMaxAge: peerSpliceMaxAge, spliceSweep: peerSpliceSweep}
	a.peerSplices = a.newPeerSplices()
	agentAttrs := func(r *http.Request) []attribute.KeyValue {
		at := attemptOf(r)
		return []attribute.KeyValue{attribute.String("edge.agent_id", at.target.AgentID), attribute.Int("edge.port", at.target.Port)}
	}
	a.local = &httputil.ReverseProxy{
		Rewrite:      func(pr *httputil.ProxyRequest) { a.rewriteLocal(pr) },
		Transport:    o.Tracer.Transport(roundTripFunc(a.localRoundTrip), "tunnel", agentAttrs),
		BufferPool:   buffers,
		ErrorHandler: a.errorHandler,
	}
	a.remote = &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { a.rewriteRemote(pr) },
		Transport:      o.Tracer.Transport(o.Peers, "edge peer", agentAttrs),
		BufferPool:     buffers,
		ModifyResponse: notHereToError,
		ErrorHandler:   a.errorHandler,
	}
	a.spliced = a.newSplicedProxy(o.Tracer.Transport(roundTripFunc(a.spliceRoundTrip), "edge peer", agentAttrs), buffers)
	return a, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// attempt carries one forwarding attempt's target and outcome through ReverseProxy's hooks.
type attempt struct {
	target AgentTarget
	holder string
	local  http.RoundTripper
	err    error
	body   *onceBody
}

type attemptKey struct{}

// attemptOf is the attempt serve put on the request. A request without one (no hook runs
// outside serve) gets an empty attempt that fails its round trip instead of a panic.
func attemptOf(r *http.Request) *attempt {
	if at, ok := r.Context().Value(attemptKey{}).(*attempt); ok {
		return at
	}
	return &attempt{err: errNoAttempt}
}

// Forward sends r to the target agent, waiting up to the configured bound for it to connect.
func (a *AgentRouter) Forward(w http.ResponseWriter, r *http.Request, t AgentTarget) {
	start := time.Now()
	outcome := a.forward(w, r, t)
	a.metrics.forwards.WithLabelValues(outcome).Inc()
	a.metrics.duration.Observe(time.Since(start).Seconds())
}

func (a *AgentRouter) forward(w http.ResponseWriter, r *http.Request, t AgentTarget) string {
	if rec := hop.RecordOf(w); rec != nil {
		rec.Agent = t.AgentID
	}
	ctx := r.Context()
	body := &onceBody{r: r.Body}
	if r.Body == nil || r.Body == http.NoBody {
		body = nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, a.o.Wait)
	defer cancel()
	waited := false
	var pause time.Duration
	for {
		if rt := a.localTransport(t); rt != nil {
			at := &attempt{target: t, local: rt, body: body}
			a.serve(w, r, at, a.local)
			if !errors.Is(at.err, errNotHere) || (body != nil && body.started()) {
				if errors.Is(at.err, errNotHere) {
					a.fail(w, r, t, fmt.Errorf("%w: the tunnel closed mid-request", tunnel.ErrAgentNotConnected))
				}
				a.observeWait(waited, "connected")
				return "local"
			}
			// The tunnel went between lookup and use, before any byte was sent: look again.
		}
		conns, err := a.lookup(ctx, t.AgentID)
		if err != nil && errors.Is(err, registry.ErrUnavailable) {
			a.fail(w, r, t, hop.ErrRegistryDown)
			a.observeWait(waited, "registry_unavailable")
			return "registry_unavailable"
		}
		for _, c := range holders(conns, t, a.o.Self) {
			if a.o.Minter == nil {
				break
			}
			at := a.serveHolder(w, r, t, c, body)
			if !errors.Is(at.err, errNotHere) {
				a.observeWait(waited, "connected")
				return "remote"
			}
			a.metrics.notHere.Inc()
			a.holders.Remove(t.AgentID)
			// The holder has none of the agent's connections: forget all it was listed with,
			// so no request takes another hop to learn the same thing.
			for _, stale := range conns {
				if stale.Edge != c.Edge {
					continue
				}
				if ferr := a.o.Registry.Forget(ctx, stale); ferr != nil {
					a.o.Log.Warn("could not drop a stale registry entry", "agent_id", t.AgentID, "edge", c.Edge, "error", ferr)
				}
			}
			if body != nil && body.started() {
				// The holder read part of the body before it said "not here": the request
				// cannot be sent again.
				a.fail(w, r, t, fmt.Errorf("%w: the holder went away mid-request", tunnel.ErrAgentNotConnected))
				return "not_here_after_body"
			}
		}
		waited = true
		_, err = a.o.Registry.Wait(waitCtx, t.AgentID)
		switch {
		case err == nil:
			// The first wake-up is the agent connecting: try at once. If it comes again, the
			// registry lists the agent but nothing here can reach it yet (an entry about to go,
			// a tunnel that just closed): pause, growing, rather than spin until it settles.
			if pause > 0 {
				select {
				case <-waitCtx.Done():
				case <-time.After(pause):
				}
			}
			pause = min(max(2*pause, 5*time.Millisecond), 500*time.Millisecond)
			continue
		case a.draining():
			a.fail(w, r, t, hop.ErrDraining)
			a.observeWait(waited, "draining")
			return "draining"
		case ctx.Err() != nil:
			a.observeWait(waited, "client_gone")
			return "client_gone"
		case errors.Is(err, registry.ErrUnavailable):
			a.fail(w, r, t, hop.ErrRegistryDown)
			a.observeWait(waited, "registry_unavailable")
			return "registry_unavailable"
		case waitCtx.Err() != nil:
			a.fail(w, r, t, tunnel.ErrAgentNotConnected)
			a.observeWait(waited, "timeout")
			return "timeout"
		default:
			a.fail(w, r, t, fmt.Errorf("%w: %w", hop.ErrRegistryDown, err))
			a.observeWait(waited, "error")
			return "error"
		}
	}
}

const holderCacheSize = 10000

type cachedHolders struct {
	conns []registry.ConnInfo
	until time.Time
}

// lookup asks the registry which edges hold an agent, reusing a recent answer that named other
// holders: without it every forwarded request is a registry round trip.
func (a *AgentRouter) lookup(ctx context.Context, agentID string) ([]registry.ConnInfo, error) {
	now := time.Now()
	if c, ok := a.holders.Get(agentID); ok && now.Before(c.until) {
		return c.conns, nil
	}
	conns, err := a.o.Registry.Lookup(ctx, agentID)
	if err == nil && a.o.HolderCache > 0 && len(holders(conns, AgentTarget{AgentID: agentID}, a.o.Self)) > 0 {
		a.holders.Add(agentID, cachedHolders{conns: conns, until: now.Add(a.o.HolderCache)})
	}
	return conns, err
}

func (a *AgentRouter) draining() bool {
	select {
	case <-a.o.Draining:
		return true
	default:
		return false
	}
}

func (a *AgentRouter) observeWait(waited bool, outcome string) {
	if waited {
		a.metrics.waits.WithLabelValues(outcome).Inc()
	}
}

func (a *AgentRouter) localTransport(t AgentTarget) http.RoundTripper {
	if t.ConnectionID != "" {
		return a.o.Tunnels.ConnTransport(t.AgentID, t.ConnectionID)
	}
	return a.o.Tunnels.Transport(t.AgentID)
}

// holders are the other edges that hold the target, one entry per edge, with Splice set when
// any of the target's connections there splices.
func holders(conns []registry.ConnInfo, t AgentTarget, self string) []registry.ConnInfo {
	var out []registry.ConnInfo
	seen := map[string]int{}
	for _, c := range conns {
		if c.Edge == self || c.Edge == "" {
			continue
		}
		if t.ConnectionID != "" && c.ConnectionID != t.ConnectionID {
			continue
		}
		if i, ok := seen[c.Edge]; ok {
			out[i].Splice = out[i].Splice || c.Splice
			continue
		}
		seen[c.Edge] = len(out)
		out = append(out, c)
	}
	return out
}

// serveHolder sends r to a holder: over a spliced connection when it can (the registry says the
// holder splices for the agent), else, or when the holder then says it does not, as a request the
// holder serves.
func (a *AgentRouter) serveHolder(w http.ResponseWriter, r *http.Request, t AgentTarget, c registry.ConnInfo, body *onceBody) *attempt {
	holder := c.Edge
	at := &attempt{target: t, holder: holder, body: body}
	if c.Splice && a.spliceable(r, at) {
		a.spliceUsed()
		a.serve(w, r, at, a.spliced)
		if !errors.Is(at.err, errNoSplice) {
			return at
		}
		a.o.Log.Debug("holder does not splice for this agent; sending requests", "agent_id", t.AgentID, "edge", holder, "error", at.err)
		a.noSplice.Add(holder+" "+t.AgentID, time.Now().Add(noSpliceFor))
		at = &attempt{target: t, holder: holder, body: body}
	}
	a.serve(continueless{w}, r, at, a.remote)
	return at
}

// continueless drops the holder's 100 Continue, its answer to the expectation rewriteRemote
// added: the client did not ask for it. A client's own expectation is this edge's server's to
// answer, as the body is read (once the holder asked for it).
type continueless struct{ http.ResponseWriter }

func (w continueless) WriteHeader(code int) {
	if code != http.StatusContinue {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w continueless) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (a *AgentRouter) serve(w http.ResponseWriter, r *http.Request, at *attempt, rp *httputil.ReverseProxy) {
	r2 := r.WithContext(context.WithValue(r.Context(), attemptKey{}, at))
	if at.body != nil {
		r2.Body = at.body
	}
	rp.ServeHTTP(w, r2)
}

func (a *AgentRouter) rewriteLocal(pr *httputil.ProxyRequest) {
	at := attemptOf(pr.In)
	pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "agent"
	pr.Out.URL.Path, pr.Out.URL.RawPath = at.target.Path, at.target.RawPath
	pr.Out.Host = pr.In.Host
	hop.SetForwarded(pr)
	hop.StripEdgeHeaders(pr.Out.Header)
	pr.Out.Header.Del("Authorization")
	pr.Out.Header.Set(hop.HeaderPort, strconv.Itoa(at.target.Port))
}

func (a *AgentRouter) localRoundTrip(r *http.Request) (*http.Response, error) {
	at := attemptOf(r)
	if at.local == nil {
		return nil, errNoAttempt
	}
	return at.local.RoundTrip(r)
}

func (a *AgentRouter) rewriteRemote(pr *httputil.ProxyRequest) {
	at := attemptOf(pr.In)
	u, err := url.Parse(at.holder)
	if err != nil {
		return
	}
	pr.Out.URL.Scheme, pr.Out.URL.Host = u.Scheme, u.Host
	pr.Out.URL.Path, pr.Out.URL.RawPath = at.target.Path, at.target.RawPath
	pr.Out.Host = pr.In.Host
	hop.SetForwarded(pr)
	hop.StripEdgeHeaders(pr.Out.Header)
	h := pr.Out.Header
	token, err := a.o.Minter.Mint(at.target.AgentID, time.Now())
	if err != nil {
		a.o.Log.Error("cannot sign an internal token", "error", err)
	}
	h.Set("Authorization", "Bearer "+token)
	h.Set(hop.HeaderAgentID, at.target.AgentID)
	h.Set(hop.HeaderPort, strconv.Itoa(at.target.Port))
	h.Set(hop.HeaderHop, "1")
	if at.target.ConnectionID != "" {
		h.Set(hop.HeaderConnectionID, at.target.ConnectionID)
	}
	// Ask before sending the body, so a holder that says "not here" has read none of it
	// and the entry edge may try another.
	if pr.Out.ContentLength != 0 {
		h.Set("Expect", "100-continue")
	}
}

func notHereToError(resp *http.Response) error {
	if resp.StatusCode == http.StatusMisdirectedRequest && resp.Header.Get(hop.HeaderNotHere) != "" {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return errNotHere
	}
	return nil
}

// errorHandler records "not here" for Forward to retry; anything else is answered.
func (a *AgentRouter) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	at := attemptOf(r)
	if errors.Is(err, hop.ErrPeerNotAllowed) {
		a.o.Log.Warn("registry names a holder outside internal.peers; not forwarding there",
			"agent_id", at.target.AgentID, "edge", at.holder)
	}
	if errors.Is(err, tunnel.ErrAgentNotConnected) || errors.Is(err, tunnel.ErrConnectionGone) || (at.holder != "" && isDialError(err)) {
		// A holder that cannot be reached holds nothing any more (it died and its entry has
		// not expired yet): like "not here", the entry edge drops it and tries the next one.
		err = fmt.Errorf("%w: %w", errNotHere, err)
	}
	at.err = err
	if errors.Is(err, errNotHere) || errors.Is(err, errNoSplice) {
		return
	}
	if r.Context().Err() != nil {
		err = r.Context().Err()
	}
	a.fail(w, r, at.target, err)
}

func (a *AgentRouter) fail(w http.ResponseWriter, r *http.Request, t AgentTarget, err error) {
	status, cause := hop.StatusOf(err)
	msg := fmt.Sprintf("agent %s: %s", t.AgentID, err)
	switch status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "5")
	case http.StatusGatewayTimeout:
		if errors.Is(err, tunnel.ErrAgentNotConnected) {
			msg = fmt.Sprintf("agent %s is not connected (waited %s)", t.AgentID, a.o.Wait)
		}
	}
	if status != hop.StatusClientClosed {
		a.o.Log.Info("agent request failed", "agent_id", t.AgentID, "status", status, "cause", cause, "error", err)
	}
	hop.Write(w, status, cause, msg)
}

// onceBody lets the entry edge tell whether any byte of a body was read, and keeps the body
// open across attempts (the transport closes what it was given).
type onceBody struct {
	r    io.ReadCloser
	read atomic.Bool
}

func (b *onceBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.read.Store(true)
	}
	return n, err
}

func (b *onceBody) Close() error { return nil }

func (b *onceBody) started() bool { return b.read.Load() }

func isDialError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
