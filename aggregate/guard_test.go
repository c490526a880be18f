package aggregate

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

// crashing is a member's transport with a bug: while mode is crashCall its calls panic; while it
// is crashBody the bodies of the answers do when read.
type crashing struct {
	base http.RoundTripper
	mode *atomic.Int32
}

const (
	crashNone = iota
	crashCall
	crashBody
)

func (c crashing) RoundTrip(r *http.Request) (*http.Response, error) {
	switch c.mode.Load() {
	case crashCall:
		panic("test: the member's transport crashed")
	case crashBody:
		resp, err := c.base.RoundTrip(r)
		if err == nil {
			resp.Body = crashingBody{resp.Body}
		}
		return resp, err
	}
	return c.base.RoundTrip(r)
}

type crashingBody struct{ io.ReadCloser }

func (crashingBody) Read([]byte) (int, error) { panic("test: reading the member's answer crashed") }

// TestMemberPanicFailsItsPart: a panic calling one member fails that member's part (a list
// answers 503 naming it), one reading its watch ends the watch (the client relists); each is
// counted (aggregate_fetch, aggregate_watch), and the proxy serves the next request.
func TestMemberPanicFailsItsPart(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := guard.New(slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := NewAuthenticator([]byte("alice-token,alice,1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := newFakeMember(t, "c1"), newFakeMember(t, "c2")
	c1.add("ns", "a")
	c2.add("ns", "b")
	p, err := New(Options{Prefix: "/k8s", Authenticate: auth.Authenticate, Members: []Member{c1.member(), c2.member()}, Guard: g}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mode atomic.Int32
	m := p.byName["c2"]
	m.client.Transport = crashing{base: m.client.Transport, mode: &mode}
	srv := httptest.NewServer(p)
	defer srv.Close()
	f := &fixture{proxy: p, srv: srv}

	mode.Store(crashCall)
	resp, body := f.do(t, "GET", "/k8s/api/v1/pods", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "c2") {
		t.Errorf("list with a crashing member: %d %s, want 503 naming c2", resp.StatusCode, body)
	}
	if got := g.Contained("aggregate_fetch"); got != 1 {
		t.Errorf("edge_panics_total{where=aggregate_fetch}: got %v, want 1", got)
	}

	mode.Store(crashBody)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/k8s/api/v1/pods?watch=1", nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	wresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(wresp.Body)
	for sc.Scan() {
	}
	wresp.Body.Close()
	if ctx.Err() != nil {
		t.Fatal("the watch did not end after reading a member's stream crashed")
	}
	if got := g.Contained("aggregate_watch"); got != 1 {
		t.Errorf("edge_panics_total{where=aggregate_watch}: got %v, want 1", got)
	}

	mode.Store(crashNone)
	if resp, body := f.do(t, "GET", "/k8s/api/v1/pods", nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `"name":"a"`) || !strings.Contains(string(body), `"name":"b"`) {
		t.Errorf("list after the crashes: %d %s, want both members' pods", resp.StatusCode, body)
	}
}
