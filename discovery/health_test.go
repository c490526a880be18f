package discovery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// An address whose check fails UnhealthyAfter times in a row is down (the cell with it, with
// Retry-After until its next check); it is up again after HealthyAfter passes.
func TestHealthChecksDownAndUp(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/base/-/readiness" {
			t.Errorf("check asked %s, want /base/-/readiness", r.URL.Path)
		}
		asked.Add(1)
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	h, err := NewHealth(HealthOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	c := h.Cell(2, []*url.URL{mustURL(t, srv.URL+"/base/")}, &Check{Path: "/-/readiness", Interval: 20 * time.Millisecond,
		Timeout: 10 * time.Millisecond, HealthyAfter: 2, UnhealthyAfter: 2})
	h.Use([]*CellHealth{c})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	defer func() { cancel(); <-done }()

	poll.Until(t, 5*time.Second, "a check", func() bool { return asked.Load() > 0 })
	if c.Pick() == nil || !c.Up() {
		t.Fatal("a passing cell is not up")
	}
	ready.Store(false)
	poll.Until(t, 5*time.Second, "the cell down", func() bool { return c.Pick() == nil })
	if c.Up() {
		t.Error("Up() with its one address down")
	}
	if ra := c.RetryAfter(); ra < time.Second || ra > 2*time.Second {
		t.Errorf("RetryAfter %v, want the 1s floor (the next check is 20ms away)", ra)
	}
	if got := gauge(t, reg, "edge_cell_up"); got != 0 {
		t.Errorf("edge_cell_up = %v, want 0", got)
	}
	ready.Store(true)
	poll.Until(t, 5*time.Second, "the cell up again", func() bool { return c.Pick() != nil })
	if got := gauge(t, reg, "edge_cell_up"); got != 1 {
		t.Errorf("edge_cell_up = %v, want 1", got)
	}
}

// gauge is the value of the one series of a gauge in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series %s", name)
	return 0
}

// A reload keeps the health of a cell whose addresses and check did not change.
func TestHealthKeptAcrossReload(t *testing.T) {
	h, err := NewHealth(HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	urls := []*url.URL{mustURL(t, "http://a:1")}
	c := h.Cell(1, urls, nil)
	h.Use([]*CellHealth{c})
	if h.Cell(1, []*url.URL{mustURL(t, "http://a:1")}, nil) != c {
		t.Error("same addresses: got a new health")
	}
	if h.Cell(1, []*url.URL{mustURL(t, "http://a:2")}, nil) == c {
		t.Error("other address: kept the old health")
	}
	if h.Cell(1, urls, &Check{Path: "/x", Interval: time.Second, Timeout: time.Second, HealthyAfter: 1, UnhealthyAfter: 1}) == c {
		t.Error("a check added: kept the old health")
	}
	if !strings.Contains(c.Addrs[0].String(), "a:1") {
		t.Errorf("address label %q", c.Addrs[0])
	}
}

// Recent counts the latest requests by status class and gives their median and 99th percentile.
func TestRecent(t *testing.T) {
	h, err := NewHealth(HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := h.Cell(1, []*url.URL{mustURL(t, "http://a:1")}, nil)
	for i := 1; i <= 100; i++ {
		status := http.StatusOK
		if i%10 == 0 {
			status = http.StatusBadGateway
		}
		c.Observe(status, time.Duration(i)*time.Millisecond)
	}
	r := c.Recent()
	if r.Requests != 100 || r.Statuses["2xx"] != 90 || r.Statuses["5xx"] != 10 {
		t.Errorf("counts: %+v", r)
	}
	if r.P50 != 51*time.Millisecond || r.P99 != 100*time.Millisecond {
		t.Errorf("p50 %v p99 %v, want 51ms and 100ms", r.P50, r.P99)
	}
	for range 2 * recentSize {
		c.Observe(http.StatusOK, time.Millisecond)
	}
	if r := c.Recent(); r.Requests != recentSize || r.Statuses["5xx"] != 0 {
		t.Errorf("after %d more: %+v, want only the latest %d", 2*recentSize, r, recentSize)
	}
}
