package workspaceauth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// crashingStore is a store with a bug: once armed, its next read panics. The recheck reads the
// user's logout mark from it in its own goroutine. (A panicking Authorizer cannot stand in: the
// Cache calls it on singleflight's goroutine, which re-panics past any recover.)
type crashingStore struct {
	Store
	armed *atomic.Bool
}

func (s crashingStore) Get(ctx context.Context, key string) ([]byte, error) {
	if s.armed.CompareAndSwap(true, false) {
		panic("test: the store crashed")
	}
	return s.Store.Get(ctx, key)
}

// TestRecheckPanicClosesTheWebSocket: a panic in a WebSocket's recheck closes that WebSocket
// (fail closed), is counted as workspace_recheck, and the workspace host serves the next request.
func TestRecheckPanicClosesTheWebSocket(t *testing.T) {
	g, err := guard.New(slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	r := newRig(t, func(o *Options) {
		o.Recheck = 100 * time.Millisecond
		o.Guard = g
		o.Store = crashingStore{Store: o.Store, armed: &armed}
	})
	c := browser()
	r.login(c, "alice", "alice")
	u, _ := url.Parse(r.url("alice", "/"))
	h := http.Header{}
	for _, ck := range c.Jar.Cookies(u) {
		h.Add("Cookie", ck.Name+"="+ck.Value)
	}
	h.Set("Origin", "http://8080-alice."+testDomain+":"+r.port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://8080-alice."+testDomain+":"+r.port+"/ws", &websocket.DialOptions{HTTPClient: testnet.Client(), HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := conn.Read(ctx); err != nil || string(b) != "hi" {
		t.Fatalf("echo: %q %v", b, err)
	}

	armed.Store(true) // the next recheck that reads the logout mark crashes
	if _, _, err := conn.Read(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after the recheck crashed: read %v, want the connection closed by edge", err)
	}
	if armed.Load() {
		t.Error("the WebSocket closed without its recheck crashing")
	}
	if got := g.Contained("workspace_recheck"); got != 1 {
		t.Errorf("edge_panics_total{where=workspace_recheck}: got %v, want 1", got)
	}

	if resp := get(t, c, r.url("alice", "/")); resp.StatusCode != http.StatusOK {
		t.Errorf("a request after the crash: status %d, want 200", resp.StatusCode)
	}
	<-r.seen
}
