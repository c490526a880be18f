package discovery

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// panickyTransport crashes the probes while crash is set, and passes them otherwise.
type panickyTransport struct{ crash, passed *atomic.Int32 }

func (p panickyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.crash.Load() == 1 {
		panic("test: a health probe crashed")
	}
	p.passed.Add(1)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// A probe that panics is contained: it records nothing (the address keeps its state), the check
// loop goes on, edge_panics_total{where=health_check} counts it, and the next probes pass.
func TestHealthProbePanicContained(t *testing.T) {
	g, err := guard.New(slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var crash, passed atomic.Int32
	crash.Store(1)
	h, err := NewHealth(HealthOptions{Transport: panickyTransport{&crash, &passed}, Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1:9")
	c := h.Cell(2, []*url.URL{u}, &Check{Path: "/-/readiness", Interval: 20 * time.Millisecond,
		Timeout: 10 * time.Millisecond, HealthyAfter: 1, UnhealthyAfter: 1})
	h.Use([]*CellHealth{c})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	defer func() { cancel(); <-done }()

	poll.Until(t, 5*time.Second, "two probes crashed and counted", func() bool { return g.Contained("health_check") >= 2 })
	if !c.Up() {
		t.Error("a crashed probe took the cell down: it must record nothing")
	}
	crash.Store(0)
	// Once a probe passed, every crashed one is counted: an interval's probes end before the next.
	poll.Until(t, 5*time.Second, "a passing probe", func() bool { return passed.Load() >= 1 })
	n := g.Contained("health_check")
	poll.Until(t, 5*time.Second, "three more passing probes", func() bool { return passed.Load() >= 4 })
	if got := g.Contained("health_check"); got != n {
		t.Errorf("panics went on after the probes stopped crashing: %v then %v", n, got)
	}
	if !c.Up() {
		t.Error("the cell is not up after passing probes")
	}
}
