package agentrouter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/registry"
)

// countingRegistry lists one holder for every agent and counts lookups.
type countingRegistry struct {
	holder  string
	lookups atomic.Int32
	mu      sync.Mutex
	forgot  []registry.ConnInfo
}

func (c *countingRegistry) Lookup(context.Context, string) ([]registry.ConnInfo, error) {
	c.lookups.Add(1)
	return []registry.ConnInfo{{AgentID: "a1", ConnectionID: "c1", Edge: c.holder}}, nil
}
func (c *countingRegistry) ByProject(context.Context, string) ([]registry.ConnInfo, error) {
	return nil, nil
}
func (c *countingRegistry) Wait(ctx context.Context, _ string) ([]registry.ConnInfo, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (c *countingRegistry) Forget(_ context.Context, stale registry.ConnInfo) error {
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
		if r.Header.Get(hop.HeaderHop) != "1" || r.Header.Get("Authorization") != "Bearer internal-jwt" {
			t.Errorf("forwarded without routing headers: %v", r.Header)
		}
		if notHere.Load() {
			w.Header().Set(hop.HeaderNotHere, "1")
			w.WriteHeader(http.StatusMisdirectedRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer holder.Close()
	reg := &countingRegistry{holder: holder.URL}
	a, err := NewAgentRouter(AgentRouterOptions{Self: "http://self", Tunnels: &fakeTunnels{held: map[string]bool{}},
		Registry: reg, Minter: staticMinter{}, Wait: 100 * time.Millisecond, PeerPrefixes: loopback})
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

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// A registry entry naming a holder outside internal.peers is never dialled: no internal JWT and
// no request leave for it, and the request ends as if the agent were not connected.
func TestHolderOutsidePeersIsNeverContacted(t *testing.T) {
	var reached atomic.Int32
	holder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer holder.Close()
	for _, tt := range []struct {
		name  string
		peers []netip.Prefix
	}{
		{"private ranges only", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		{"none", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := &countingRegistry{holder: holder.URL}
			a, err := NewAgentRouter(AgentRouterOptions{Self: "http://self", Tunnels: &fakeTunnels{held: map[string]bool{}},
				Registry: reg, Minter: staticMinter{}, Wait: 50 * time.Millisecond, PeerPrefixes: tt.peers})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			a.Forward(w, httptest.NewRequest("GET", "/", nil), AgentTarget{AgentID: "a1", Port: 80, Path: "/"})
			if w.Code != http.StatusGatewayTimeout {
				t.Errorf("status %d, want 504", w.Code)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("holder outside internal.peers got %d requests, want 0", n)
			}
		})
	}
}

func TestPeerAllowed(t *testing.T) {
	peers := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8081", true},
		{"10.1.2.3:8081", true},
		{"169.254.169.254:80", false},
		{"[fe80::1]:80", false},
		{"[::ffff:169.254.169.254]:80", false},
		{"not-an-address", false},
	}
	for _, tt := range tests {
		if got := peerAllowed(peers, tt.addr); got != tt.want {
			t.Errorf("peerAllowed(%s): got %v, want %v", tt.addr, got, tt.want)
		}
	}
}
