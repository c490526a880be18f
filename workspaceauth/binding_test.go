package workspaceauth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestTransferBoundToBrowser: a transfer token is spent only by the browser that started the
// login on that workspace host. An attacker's transfer link opened by a victim gets 400 and sets
// nothing; a victim already logged in keeps their own session.
func TestTransferBoundToBrowser(t *testing.T) {
	r := newRig(t, nil)
	attackerLink := func() string {
		attacker := browser()
		return wantRedirect(t, get(t, attacker, r.callback(attacker, r.toProvider(attacker, "alice"), "bob")), r.url("alice", "/"))
	}
	t.Run("a fresh browser", func(t *testing.T) {
		victim := browser()
		resp := get(t, victim, attackerLink())
		if resp.StatusCode != http.StatusBadRequest || len(resp.Cookies()) != 0 {
			t.Errorf("status %d, cookies %v; want 400 and none", resp.StatusCode, resp.Cookies())
		}
		wantRedirect(t, get(t, victim, r.url("alice", "/")), "http://auth.")
	})
	t.Run("a browser logged in already", func(t *testing.T) {
		victim := browser()
		r.login(victim, "alice", "alice")
		resp := get(t, victim, attackerLink())
		if resp.StatusCode != http.StatusBadRequest || len(resp.Cookies()) != 0 {
			t.Errorf("status %d, cookies %v; want 400 and none", resp.StatusCode, resp.Cookies())
		}
		if resp := get(t, victim, r.url("alice", "/index.html")); resp.StatusCode != http.StatusOK {
			t.Errorf("the victim's own session: status %d, want 200", resp.StatusCode)
		}
		if h := <-r.seen; h == nil {
			t.Fatal("the app saw nothing")
		}
	})
	t.Run("a binding cookie copied to another host", func(t *testing.T) {
		// The binding is host-only: the same value on bob's host binds nothing there.
		c := browser()
		start := wantRedirect(t, get(t, c, r.url("alice", "/")), "http://auth.")
		link := wantRedirect(t, get(t, c, r.callback(c, wantRedirect(t, get(t, c, start), r.op.Issuer), "alice")), r.url("alice", "/"))
		if resp := get(t, c, strings.Replace(link, "8080-alice.", "8080-bob.", 1)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("on another host: status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("two tabs of one browser", func(t *testing.T) {
		c := browser()
		first := r.toProvider(c, "alice")
		second := r.toProvider(c, "alice")
		for _, authURL := range []string{first, second} {
			link := wantRedirect(t, get(t, c, r.callback(c, authURL, "alice")), r.url("alice", "/"))
			wantRedirect(t, get(t, c, link), "/index.html")
		}
	})
}

// TestLoginLimits: unauthenticated requests hold at most PerClient login tickets per client
// address; past it, 429 with Retry-After, counted; another address is not affected.
func TestLoginLimits(t *testing.T) {
	r := newRig(t, nil)
	r.store.limits = Limits{PerClient: 3, Total: 100}
	from := func(addr string) *http.Response {
		return get(t, browser(), r.url("alice", "/x"), "X-Forwarded-For", addr)
	}
	for range 3 {
		wantRedirect(t, from("192.0.2.7"), "http://auth.")
	}
	resp := from("192.0.2.7")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the limit: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	wantRedirect(t, from("192.0.2.8"), "http://auth.")
	// An IPv6 client counts by its /64.
	for range 3 {
		wantRedirect(t, from("2001:db8:1:2::1"), "http://auth.")
	}
	if resp := from("2001:db8:1:2::ffff"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("same /64: %d, want 429", resp.StatusCode)
	}
	if got := counterValue(t, r.auth.metrics.logins.WithLabelValues("busy")); got != 2 {
		t.Errorf("busy logins counted %v, want 2", got)
	}
	// A spent ticket frees its room.
	c := browser()
	start := wantRedirect(t, get(t, c, r.url("alice", "/y"), "X-Forwarded-For", "192.0.2.9"), "http://auth.")
	for range 2 {
		wantRedirect(t, from("192.0.2.9"), "http://auth.")
	}
	u, _ := url.Parse(start)
	if _, err := r.store.Take(t.Context(), "login:"+u.Query().Get("login")); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, from("192.0.2.9"), "http://auth.")
}
