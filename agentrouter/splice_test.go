package agentrouter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/spantest"
	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/tracing"
)

// listRegistry names the same holders for every agent, their connections splicing or not.
type listRegistry struct {
	holders []string
	splice  bool
}

func (l listRegistry) Lookup(_ context.Context, agentID string) ([]registry.ConnInfo, error) {
	var out []registry.ConnInfo
	for i, h := range l.holders {
		out = append(out, registry.ConnInfo{AgentID: agentID, ConnectionID: fmt.Sprint("c", i), Edge: h, Splice: l.splice})
	}
	return out, nil
}
func (listRegistry) ByProject(context.Context, string) ([]registry.ConnInfo, error) { return nil, nil }
func (listRegistry) Wait(ctx context.Context, _ string) ([]registry.ConnInfo, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (listRegistry) Forget(context.Context, registry.ConnInfo) error { return nil }

// holderFixture is a holder edge: its internal handler over a splicing fake agent whose upstream
// counts its connections and echoes what reached it; every request to the internal listener is
// recorded.
type holderFixture struct {
	srv      *httptest.Server
	tun      *fakeTunnels
	router   *AgentRouter
	metrics  *prometheus.Registry
	upConns  atomic.Int32
	upClosed atomic.Int32
	mu       sync.Mutex
	received []http.Header // the internal listener's requests, in order
}

var spliceSecret = []byte(strings.Repeat("k", 32))

func newHolder(t *testing.T, holds bool) *holderFixture {
	t.Helper()
	h := &holderFixture{metrics: prometheus.NewRegistry()}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.RequestURI, "/raw/") {
			io.WriteString(w, r.RequestURI)
			return
		}
		json.NewEncoder(w).Encode(echoed{Path: r.URL.Path, Header: r.Header.Clone()})
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			h.upConns.Add(1)
		case http.StateClosed:
			h.upClosed.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	h.tun = &fakeTunnels{held: map[string]bool{"a1": holds}, upstream: up}
	router, err := NewAgentRouter(AgentRouterOptions{Self: "http://holder", Tunnels: h.tun, Registry: listRegistry{},
		Wait: 50 * time.Millisecond, Registerer: h.metrics})
	if err != nil {
		t.Fatal(err)
	}
	h.router = router
	internal := router.InternalHandler(fakeInternalVerifier{spliceSecret})
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.received = append(h.received, r.Header.Clone())
		h.mu.Unlock()
		internal.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *holderFixture) requests() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.received...)
}

func (h *holderFixture) internal(t *testing.T, outcome string) float64 {
	t.Helper()
	mfs, _ := h.metrics.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "edge_internal_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func newEntry(t *testing.T, holders ...*holderFixture) *AgentRouter {
	t.Helper()
	return newEntryFor(t, true, holders...)
}

// newEntryFor is an entry edge whose registry says the holders' connections splice or not.
func newEntryFor(t *testing.T, splice bool, holders ...*holderFixture) *AgentRouter {
	t.Helper()
	return newEntryTraced(t, splice, nil, holders...)
}

func newEntryTraced(t *testing.T, splice bool, tracer *tracing.Tracer, holders ...*holderFixture) *AgentRouter {
	t.Helper()
	signer, err := tokens.NewInternalSigner(spliceSecret, 0)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, h := range holders {
		urls = append(urls, h.srv.URL)
	}
	a, err := NewAgentRouter(AgentRouterOptions{Self: "http://entry", Tunnels: &fakeTunnels{held: map[string]bool{}},
		Registry: listRegistry{urls, splice}, Minter: signer, PeerPrefixes: loopback, Wait: 200 * time.Millisecond, Tracer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func forwardGET(a *AgentRouter, port int, path string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "http://client.example/-/api/v1/agents/a1/proxy/x"+path, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	a.Forward(w, r, AgentTarget{AgentID: "a1", Port: port, Path: path})
	return w
}

// Requests entering another edge reach the agent over one spliced connection to the holder: the
// holder opens one splice stream, proxies none of them, and the upstream sees one connection and
// the request the per-request path gave it.
func TestSplicedHop(t *testing.T) {
	h := newHolder(t, true)
	a := newEntry(t, h)
	for i := range 5 {
		w := forwardGET(a, 8080, "/x", http.Header{"Authorization": {"Bearer api"}, "Forwarded": {"for=1.2.3.4"}, "X-Kept": {"k"}})
		var got echoed
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
			t.Fatalf("request %d: %d %q", i, w.Code, w.Body)
		}
		for k := range got.Header {
			if hop.FoldPrefix(k, "edge-") || k == "Authorization" || k == "Forwarded" {
				t.Errorf("the upstream got %s: %v", k, got.Header[k])
			}
		}
		if got.Path != "/x" || got.Header.Get("X-Kept") != "k" || got.Header.Get("X-Forwarded-Host") != "client.example" || got.Header.Get("X-Real-Ip") == "" {
			t.Errorf("the upstream got %+v", got)
		}
	}
	if n := h.upConns.Load(); n != 1 {
		t.Errorf("upstream connections for 5 requests: got %d, want 1", n)
	}
	if n := len(h.requests()); n != 1 {
		t.Errorf("requests at the holder's internal listener: got %d, want 1 (the splice open)", n)
	}
	if got := h.internal(t, "spliced"); got != 1 {
		t.Errorf("holder: spliced opens: got %v, want 1", got)
	}
	if h.requests()[0].Get(HeaderSplicePort) != "8080" || h.requests()[0].Get(hop.HeaderPort) != "" {
		t.Errorf("splice open headers: %v", h.requests()[0])
	}
}

// The path reaches the upstream byte for byte over a spliced connection too.
func TestSplicedHopRawPath(t *testing.T) {
	h := newHolder(t, true)
	a := newEntry(t, h)
	for _, p := range []struct{ path, raw string }{{"/raw/a/b", "/raw/a%2Fb"}, {"/raw/x/../y//z", ""}} {
		r := httptest.NewRequest("GET", "/", nil)
		w := httptest.NewRecorder()
		a.Forward(w, r, AgentTarget{AgentID: "a1", Port: 8080, Path: p.path, RawPath: p.raw})
		want := p.raw
		if want == "" {
			want = p.path
		}
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("upstream got %d %q, want %q", w.Code, w.Body, want)
		}
	}
}

// A holder that does not hold the agent says so before any byte of the request is sent, and the
// entry edge goes on to the next holder.
func TestSplicedHopNotHereFirst(t *testing.T) {
	gone, holder := newHolder(t, false), newHolder(t, true)
	a := newEntry(t, gone, holder)
	if w := forwardGET(a, 8080, "/x", nil); w.Code != 200 {
		t.Fatalf("status %d %q, want 200 from the second holder", w.Code, w.Body)
	}
	got := gone.requests()
	if len(got) != 1 || got[0].Get(HeaderSplicePort) == "" {
		t.Errorf("the holder without the agent got %d requests (%v), want the splice open only", len(got), got)
	}
	if gone.internal(t, "not_here") != 1 || gone.upConns.Load() != 0 {
		t.Errorf("the holder without the agent: not here %v, upstream connections %d", gone.internal(t, "not_here"), gone.upConns.Load())
	}
}

// An agent that does not splice (older, or with tracing) gets its requests the per-request way;
// the entry edge does not ask that holder to splice for it again.
func TestSplicedHopAgentWithoutSplice(t *testing.T) {
	h := newHolder(t, true)
	h.tun.noSplice = true
	a := newEntry(t, h)
	for range 3 {
		if w := forwardGET(a, 8080, "/x", nil); w.Code != 200 {
			t.Fatalf("status %d %q, want 200", w.Code, w.Body)
		}
	}
	if h.tun.spliced != 1 || h.internal(t, "no_splice") != 1 || h.internal(t, "served") != 3 {
		t.Errorf("splice asks %d, no_splice %v, served %v: want 1, 1, 3", h.tun.spliced, h.internal(t, "no_splice"), h.internal(t, "served"))
	}
}

// A registry entry without Splice (an older holder, or an agent that does not splice) is sent
// requests: no splice open.
func TestSplicedHopNotInRegistry(t *testing.T) {
	h := newHolder(t, true)
	a := newEntryFor(t, false, h)
	for range 2 {
		if w := forwardGET(a, 8080, "/x", nil); w.Code != 200 {
			t.Fatalf("status %d %q", w.Code, w.Body)
		}
	}
	if h.tun.spliced != 0 || h.internal(t, "served") != 2 {
		t.Errorf("splice asks %d, served %v: want 0 and 2", h.tun.spliced, h.internal(t, "served"))
	}
}

// A holder without splicing refuses a splice open (no Edge-Port) should one reach it; the
// request then goes the per-request way.
func TestSplicedHopOlderHolder(t *testing.T) {
	var opens, served atomic.Int32
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(hop.HeaderPort) == "" {
			opens.Add(1)
			hop.Write(w, http.StatusBadRequest, "bad_request", "port \"\" is not 1-65535")
			return
		}
		served.Add(1)
		io.WriteString(w, "per request")
	}))
	defer old.Close()
	a := newEntry(t, &holderFixture{srv: old})
	for range 2 {
		if w := forwardGET(a, 8080, "/x", nil); w.Code != 200 || w.Body.String() != "per request" {
			t.Fatalf("got %d %q", w.Code, w.Body)
		}
	}
	if opens.Load() != 1 || served.Load() != 2 {
		t.Errorf("splice opens %d, requests served %d: want 1 and 2", opens.Load(), served.Load())
	}
}

// The agent's refusal of the port is the client's answer, as on the per-request path.
func TestSplicedHopPortRefused(t *testing.T) {
	h := newHolder(t, true)
	a := newEntry(t, h)
	w := forwardGET(a, 1, "/x", nil)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "port_not_allowed") {
		t.Errorf("got %d %q, want the agent's 403 port_not_allowed", w.Code, w.Body)
	}
	if w.Header().Get(HeaderAgentRefused) != "" {
		t.Errorf("the client got %s", HeaderAgentRefused)
	}
}

// A spliced connection past its age is not reused: the next request opens another, so a holder
// connection that drains stops getting requests.
func TestSplicedHopMaxAge(t *testing.T) {
	h := newHolder(t, true)
	a := newEntry(t, h)
	a.spliceMaxAge = 0
	for range 3 {
		if w := forwardGET(a, 8080, "/x", nil); w.Code != 200 {
			t.Fatalf("status %d", w.Code)
		}
	}
	if got := h.internal(t, "spliced"); got != 3 {
		t.Errorf("splice opens with no reuse: got %v, want 3", got)
	}
}

// The API for GitLab lists connections without Splice (between edges only), and the registry's
// answer it was given is left as it was.
func TestConnectionsHideSplice(t *testing.T) {
	a := newEntry(t)
	conns := []registry.ConnInfo{{AgentID: "a1", ConnectionID: "c1", Edge: "http://h", Splice: true}}
	w := httptest.NewRecorder()
	a.writeConnections(w, conns, nil)
	if strings.Contains(w.Body.String(), "splice") || !strings.Contains(w.Body.String(), `"connection_id":"c1"`) {
		t.Errorf("connections: got %s", w.Body)
	}
	if !conns[0].Splice {
		t.Error("the caller's slice was changed")
	}
}

// With tracing on, the entry edge's span of a spliced request ("edge peer") is what the upstream
// gets in traceparent: the holder does not see the request.
func TestSplicedHopSendsTraceparent(t *testing.T) {
	exp := &spantest.Recorder{}
	tr := spantest.NewTracer(t, 1, exp)
	h := newHolder(t, true)
	a := newEntryTraced(t, true, tr, h)
	w := forwardGET(a, 8080, "/x", nil)
	var got echoed
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("%d %q", w.Code, w.Body)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(exp.Spans()) != 1 || exp.Spans()[0].Name() != "edge peer" {
		t.Fatalf("spans: %d, want the one edge peer span", len(exp.Spans()))
	}
	sc := exp.Spans()[0].SpanContext()
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; got.Header.Get("Traceparent") != want {
		t.Errorf("the upstream got traceparent %q, want %q", got.Header.Get("Traceparent"), want)
	}
	if h.internal(t, "spliced") != 1 {
		t.Errorf("not spliced")
	}
}

// The entry edge closes its idle spliced connections on its own, while it uses them and once
// after: they hold a stream at the holder and an upstream connection at the agent.
func TestSplicedHopIdleSwept(t *testing.T) {
	h := newHolder(t, true)
	a := newEntry(t, h)
	a.spliceSweep = 20 * time.Millisecond
	if w := forwardGET(a, 8080, "/x", nil); w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	poll.Until(t, 10*time.Second, "the idle spliced connection closed, and the upstream's with it", func() bool { return h.upClosed.Load() == 1 })
	if w := forwardGET(a, 8080, "/x", nil); w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	poll.Until(t, 10*time.Second, "the second one closed too", func() bool { return h.upClosed.Load() == 2 })
}
