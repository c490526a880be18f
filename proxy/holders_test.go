package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gitlab.com/edge/edge/discovery"
)

// countingRegistry lists one holder for every agent and counts lookups.
type countingRegistry struct {
	holder  string
	lookups atomic.Int32
	mu      sync.Mutex
	forgot  []discovery.ConnInfo
}

func (c *countingRegistry) Lookup(context.Context, string) ([]discovery.ConnInfo, error) {
	c.lookups.Add(1)
	return []discovery.ConnInfo{{AgentID: "a1", ConnectionID: "c1", Edge: c.holder}}, nil
}
func (c *countingRegistry) ByProject(context.Context, string) ([]discovery.ConnInfo, error) {
	return nil, nil
}
func (c *countingRegistry) Wait(ctx context.Context, _ string) ([]discovery.ConnInfo, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (c *countingRegistry) Forget(_ context.Context, stale discovery.ConnInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgot = append(c.forgot, stale)
	return nil
}

type staticMinter struct{}

func (staticMinter) Mint(string, time.Time) (string, error) { return "internal-jwt", nil }

func TestHolderAnswersAreReusedUntilNotHere(t *testing.T) {
	var notHere atomic.Bool
	holder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderHop) != "1" || r.Header.Get("Authorization") != "Bearer internal-jwt" {
			t.Errorf("forwarded without routing headers: %v", r.Header)
		}
		if notHere.Load() {
			w.Header().Set(HeaderNotHere, "1")
			w.WriteHeader(http.StatusMisdirectedRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer holder.Close()
	reg := &countingRegistry{holder: holder.URL}
	a, err := NewAgentRouter(AgentRouterOptions{Self: "http://self", Tunnels: &fakeTunnels{held: map[string]bool{}},
		Registry: reg, Minter: staticMinter{}, Wait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	forward := func() int {
		w := httptest.NewRecorder()
		a.Forward(w, httptest.NewRequest("GET", "/", nil), AgentTarget{AgentID: "a1", Port: 80, Path: "/"})
		return w.Code
	}
	for range 10 {
		if code := forward(); code != http.StatusOK {
			t.Fatalf("status %d, want 200 from the holder", code)
		}
	}
	if n := reg.lookups.Load(); n != 1 {
		t.Errorf("registry lookups for 10 requests: got %d, want 1", n)
	}
	notHere.Store(true)
	if code := forward(); code != http.StatusGatewayTimeout {
		t.Errorf("holder not here: status %d, want 504 after the wait", code)
	}
	if len(reg.forgot) == 0 {
		t.Errorf("the stale holder was not forgotten")
	}
	notHere.Store(false)
	if code := forward(); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	if n := reg.lookups.Load(); n != 2 {
		t.Errorf("after not here the cached answer must be dropped: got %d lookups, want 2", n)
	}
}
