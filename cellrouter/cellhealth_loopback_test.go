package cellrouter

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// withCell2 changes cell 2 of the fixture's cells.
func withCell2(t *testing.T, o *Options, change func(*discovery.Cell)) {
	t.Helper()
	var cells []discovery.Cell
	for _, c := range o.Cells.All() {
		c := *c
		if c.ID == 2 {
			change(&c)
		}
		cells = append(cells, c)
	}
	dc, err := discovery.NewCells(cells)
	if err != nil {
		t.Fatal(err)
	}
	o.Cells = dc
}

// cellHealth is the fixture proxy's health of cell id.
func (f *fixture) cellHealth(t *testing.T, id uint64) *discovery.CellHealth {
	t.Helper()
	for _, c := range f.proxy.CellHealth() {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no health for cell %d", id)
	return nil
}

// closedPort is an address on 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type edgeError struct {
	Error, Message string
}

func ask(t *testing.T, f *fixture) (*http.Response, edgeError) {
	t.Helper()
	resp, body := do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", routable(t, 2)))
	var e edgeError
	_ = json.Unmarshal(body, &e)
	return resp, e
}

// A dead cell without checks is dialled for every request: passive evidence ejects its address
// but never takes its last one out, so edge answers 502 connection_refused, never 503.
func TestDeadCellWithoutChecksStillDialled(t *testing.T) {
	f := newFixture(t, nil)
	f.cells[1].srv.Close()
	for i := range 5 {
		if resp, e := ask(t, f); resp.StatusCode != http.StatusBadGateway || e.Error != "connection_refused" {
			t.Fatalf("request %d: %d %+v, want 502 connection_refused", i, resp.StatusCode, e)
		}
	}
	if n := counterValue(t, f.proxy.metrics.upstreamErrors.WithLabelValues("2", "connection_refused")); n != 5 {
		t.Errorf("connection refused %v times, want 5: a cell without checks is dialled anyway", n)
	}
	h := f.cellHealth(t, 2)
	if s := h.State()[0]; s.EjectedBy != "connect" || !h.Up() || !h.Degraded() {
		t.Errorf("state %+v up %v degraded %v, want ejected by connect, up and degraded", s, h.Up(), h.Degraded())
	}
}

// A dead cell whose checks say down is answered 503 cell_unavailable at once, with
// Retry-After, and is not dialled.
func TestDeadCellAnswered503OnceChecksSayDown(t *testing.T) {
	h, err := discovery.NewHealth(discovery.HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) {
		withCell2(t, o, func(c *discovery.Cell) {
			c.Check = &discovery.Check{Path: "/-/readiness", Interval: 20 * time.Millisecond, Timeout: 100 * time.Millisecond,
				HealthyAfter: 1, UnhealthyAfter: 2}
		})
		o.Health = h
	})
	h.Use(f.proxy.CellHealth())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	if resp, e := ask(t, f); resp.StatusCode != http.StatusOK {
		t.Fatalf("cell alive: %d %+v, want 200", resp.StatusCode, e)
	}
	f.cells[1].srv.Close()
	poll.UntilState(t, 5*time.Second, "503 cell_unavailable", func() (bool, string) {
		resp, e := ask(t, f)
		return resp.StatusCode == http.StatusServiceUnavailable && e.Error == "cell_unavailable", strconv.Itoa(resp.StatusCode) + " " + e.Error
	})
	dials := counterValue(t, f.proxy.metrics.upstreamErrors.WithLabelValues("2", "connection_refused"))
	for range 5 {
		resp, e := ask(t, f)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || e.Error != "cell_unavailable" || !strings.Contains(e.Message, "cell 2") || err != nil || secs < 1 {
			t.Fatalf("got %d %+v Retry-After %q, want 503 cell_unavailable naming cell 2 with Retry-After", resp.StatusCode, e, resp.Header.Get("Retry-After"))
		}
	}
	if after := counterValue(t, f.proxy.metrics.upstreamErrors.WithLabelValues("2", "connection_refused")); after != dials {
		t.Errorf("connection refused went from %v to %v while the checks held the cell down: it was dialled", dials, after)
	}
}

// One dead address of two (a closed port) is left out within one request: every GET succeeds on
// its first try, and the dead address is dialled once per back-off at most.
func TestOneDeadAddressOfTwoLeftOut(t *testing.T) {
	dead := closedPort(t)
	reg := prometheus.NewRegistry()
	h, err := discovery.NewHealth(discovery.HealthOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) {
		withCell2(t, o, func(c *discovery.Cell) {
			c.URLs = []*url.URL{{Scheme: "http", Host: dead}, c.URL}
		})
		o.Health = h
	})
	h.Use(f.proxy.CellHealth())
	start := time.Now()
	for i := range 20 {
		if resp, e := ask(t, f); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %d: %d %+v, want 200 from the live address", i, resp.StatusCode, e)
		}
	}
	if n := len(f.cells[1].requests()); n != 20 {
		t.Errorf("the live address saw %d requests, want 20", n)
	}
	ch := f.cellHealth(t, 2)
	s := ch.State()
	if s[0].EjectedBy != "connect" || !s[1].Up || ch.Degraded() {
		t.Errorf("state %+v degraded %v, want the dead address ejected by connect, the live one up", s, ch.Degraded())
	}
	if n := f.proxy.metrics.upstreamErrors.WithLabelValues("2", "connection_refused"); counterValue(t, n) != 0 {
		t.Errorf("%v requests failed with connection refused, want none", counterValue(t, n))
	}
	backoffs := 1 + int(time.Since(start)/time.Second)
	if n := ejections(t, reg, "2", "connect"); n < 1 || n > float64(backoffs) {
		t.Errorf(`edge_cell_ejections_total{cell="2",evidence="connect"} = %v in %v, want 1 to %d`, n, time.Since(start), backoffs)
	}
}

// ejections is edge_cell_ejections_total{cell,evidence} in reg.
func ejections(t *testing.T, reg *prometheus.Registry, cell, evidence string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "edge_cell_ejections_total" {
			continue
		}
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["cell"] == cell && labels["evidence"] == evidence {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// dropper is the cell's answer to the attacker's requests: the connection closed, no answer (a
// handler that panics, a worker killed).
func dropper(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/api/v4/jobs/2999999/") {
		w.WriteHeader(http.StatusOK)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// One client whose requests the cell ends without an answer takes nothing from another client
// of the same healthy cell: its resets eject the cell's only address at most passively, which
// never keeps edge from dialling it, so the other client gets no 503 and at most 1% non-2xx.
func TestClientDroppingRequestsCannotTakeCellOut(t *testing.T) {
	f := newFixture(t, nil)
	f.cells[1].answer = dropper
	attack := func() int {
		resp, body := do(t, newReq(t, "GET", f.front.URL+"/api/v4/jobs/2999999/artifacts", nil))
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("a dropped request: %d %s, want 502", resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	for range discovery.DefaultGatewayFailures + 1 {
		attack()
	}
	h := f.cellHealth(t, 2)
	if s := h.State()[0]; s.EjectedBy != "gateway" {
		t.Fatalf("after %d dropped requests in a row: %+v, want the address ejected by gateway", discovery.DefaultGatewayFailures+1, s)
	}
	if resp, e := ask(t, f); resp.StatusCode != http.StatusOK {
		t.Fatalf("the only address ejected by gateway failures: %d %+v, want 200 (dialled anyway)", resp.StatusCode, e)
	}

	const window = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var wg sync.WaitGroup
	attacks := 0
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond) // 100 a second
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				attack()
				attacks++
			}
		}
	})
	total, refused, unavailable := 0, 0, 0
	for ctx.Err() == nil {
		resp, _ := ask(t, f)
		total++
		if resp.StatusCode/100 != 2 {
			refused++
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			unavailable++
		}
	}
	wg.Wait()
	t.Logf("%d dropped requests, %d others: %d refused (%.2f%%)", attacks, total, refused, 100*float64(refused)/float64(total))
	if unavailable != 0 || refused*100 > total {
		t.Errorf("the other client: %d of %d refused, %d of them 503; want no 503 and at most 1%%", refused, total, unavailable)
	}
}
