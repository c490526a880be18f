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
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/tunnel"
)

// fakeTunnels stands for this edge's tunnel table: agents it holds answer from an upstream
// server that echoes what reached it.
type fakeTunnels struct {
	mu       sync.Mutex
	held     map[string]bool
	upstream *httptest.Server
	noSplice bool // the agent does not splice
	spliced  int  // Splice calls
}

func (f *fakeTunnels) hold(agentID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[agentID] = true
}

func (f *fakeTunnels) Transport(agentID string) http.RoundTripper {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.held[agentID] {
		return nil
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.URL.Host = strings.TrimPrefix(f.upstream.URL, "http://")
		return http.DefaultTransport.RoundTrip(r)
	})
}

func (f *fakeTunnels) ConnTransport(agentID, _ string) http.RoundTripper { return f.Transport(agentID) }

// Splice stands for a splicing agent: a raw connection to the upstream server, whatever the
// port; port 1 is refused as an agent refuses a port it does not serve. With noSplice set the
// agent serves each request itself.
func (f *fakeTunnels) Splice(ctx context.Context, agentID, _ string, port int) (net.Conn, error) {
	f.mu.Lock()
	held, noSplice := f.held[agentID], f.noSplice
	f.spliced++
	f.mu.Unlock()
	switch {
	case !held:
		return nil, tunnel.ErrAgentNotConnected
	case noSplice:
		return nil, tunnel.ErrNoSplice
	case port == 1:
		return nil, &tunnel.RefusedError{StatusCode: http.StatusForbidden, Header: http.Header{"Content-Type": {"application/json"}},
			Body: []byte(`{"error":"port_not_allowed","message":"port 1 is not allowed by the agent"}`)}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", strings.TrimPrefix(f.upstream.URL, "http://"))
}

type echoed struct {
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

func newAgentFixture(t *testing.T, wait time.Duration) (*AgentRouter, *fakeTunnels, *registry.Memory) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		json.NewEncoder(w).Encode(echoed{r.URL.Path, r.Header, string(body)})
	}))
	t.Cleanup(up.Close)
	tun := &fakeTunnels{held: map[string]bool{}, upstream: up}
	reg, err := registry.NewMemory(registry.NewMemoryStore(), registry.Options{Self: "http://127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go reg.Run(ctx)
	a, err := NewAgentRouter(AgentRouterOptions{Self: "http://127.0.0.1:1", Tunnels: tun, Registry: reg, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	return a, tun, reg
}

func TestAgentRouterLocalTunnel(t *testing.T) {
	a, tun, _ := newAgentFixture(t, time.Second)
	tun.hold("a1")
	r := httptest.NewRequest("POST", "/-/api/v1/agents/a1/proxy/8080/x", strings.NewReader("hello"))
	r.Header.Set("Authorization", "Bearer gitlab-jwt")
	r.Header.Set("Edge-Hop", "7")
	w := httptest.NewRecorder()
	a.Forward(w, r, AgentTarget{AgentID: "a1", Port: 8080, Path: "/x"})
	var got echoed
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("status %d body %q", w.Code, w.Body)
	}
	if got.Path != "/x" || got.Body != "hello" {
		t.Errorf("upstream got path %q body %q", got.Path, got.Body)
	}
	if got.Header.Get("Authorization") != "" || got.Header.Get("Edge-Hop") != "" {
		t.Errorf("caller credentials or routing headers reached the agent: %v", got.Header)
	}
	if got.Header.Get("Edge-Port") != "8080" {
		t.Errorf("Edge-Port: got %q, want 8080 (for the tunnel)", got.Header.Get("Edge-Port"))
	}
}

func TestAgentRouterWaitsThenTimesOut(t *testing.T) {
	a, _, _ := newAgentFixture(t, 200*time.Millisecond)
	w := httptest.NewRecorder()
	a.Forward(w, httptest.NewRequest("GET", "/", nil), AgentTarget{AgentID: "missing-agent", Port: 80, Path: "/"})
	if w.Code != http.StatusGatewayTimeout || !strings.Contains(w.Body.String(), "missing-agent") {
		t.Errorf("got %d %q, want 504 naming the agent", w.Code, w.Body)
	}
}

func TestAgentRouterWakesWhenAgentConnects(t *testing.T) {
	_, tun, _ := newAgentFixture(t, 10*time.Second)
	// The fixture's router over a registry whose metrics are kept: its waiters gauge says when
	// the request is waiting, and only then does the agent connect.
	metrics := prometheus.NewRegistry()
	reg, err := registry.NewMemory(registry.NewMemoryStore(), registry.Options{Self: "http://127.0.0.1:1", Registerer: metrics}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reg.Run(ctx)
	a, err := NewAgentRouter(AgentRouterOptions{Self: "http://127.0.0.1:1", Tunnels: tun, Registry: reg, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waiters := func() float64 {
		mfs, _ := metrics.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "edge_registry_waiters" && len(mf.GetMetric()) == 1 {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}

	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		a.Forward(w, httptest.NewRequest("GET", "/", nil), AgentTarget{AgentID: "late", Port: 80, Path: "/"})
		answered <- w
	}()
	poll.UntilState(t, 10*time.Second, "the request to wait for the agent", func() (bool, string) {
		w := waiters()
		return w == 1, fmt.Sprintf("waiters %v", w)
	})
	tun.hold("late")
	if err := reg.Register(context.Background(), registry.ConnInfo{AgentID: "late", ConnectionID: "c1", ConnectedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// The request waits at most the router's 10 s: a 504 then means the connect did not wake it.
	if w := <-answered; w.Code != http.StatusOK {
		t.Fatalf("status %d %q, want 200 once the agent connected", w.Code, w.Body)
	}
}

type fakeInternalVerifier struct{ secret []byte }

func (f fakeInternalVerifier) Verify(token, agentID string, now time.Time) error {
	v, err := tokens.NewInternalVerifier(f.secret, 0, 0)
	if err != nil {
		return err
	}
	return v.Verify(token, agentID, now)
}

func TestInternalHandler(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	signer, err := tokens.NewInternalSigner(secret, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, tun, _ := newAgentFixture(t, time.Second)
	tun.hold("a1")
	h := a.InternalHandler(fakeInternalVerifier{secret})
	good, _ := signer.Mint("a1", time.Now())
	other, _ := signer.Mint("a2", time.Now())
	tests := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"served", map[string]string{"Authorization": "Bearer " + good, hop.HeaderAgentID: "a1", hop.HeaderHop: "1", hop.HeaderPort: "80"}, 200},
		{"no token", map[string]string{hop.HeaderAgentID: "a1", hop.HeaderHop: "1", hop.HeaderPort: "80"}, 401},
		{"token for another agent", map[string]string{"Authorization": "Bearer " + other, hop.HeaderAgentID: "a1", hop.HeaderHop: "1", hop.HeaderPort: "80"}, 401},
		{"two hops", map[string]string{"Authorization": "Bearer " + good, hop.HeaderAgentID: "a1", hop.HeaderHop: "2", hop.HeaderPort: "80"}, 508},
		{"not here", map[string]string{"Authorization": "Bearer " + other, hop.HeaderAgentID: "a2", hop.HeaderHop: "1", hop.HeaderPort: "80"}, 421},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/path", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status %d %q, want %d", w.Code, w.Body, tt.want)
			}
			if tt.want == 421 && w.Header().Get(hop.HeaderNotHere) == "" {
				t.Errorf("421 without %s", hop.HeaderNotHere)
			}
		})
	}
}
