package discovery

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newTestHealth(t *testing.T, o HealthOptions) *Health {
	t.Helper()
	h, err := NewHealth(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// twoAddresses is a cell of h with addresses a and b, not checked.
func twoAddresses(t *testing.T, h *Health) (*CellHealth, *Address, *Address) {
	t.Helper()
	c := h.Cell(1, []*url.URL{mustURL(t, "http://a:1"), mustURL(t, "http://b:1")}, nil)
	return c, c.Addrs[0], c.Addrs[1]
}

// ejectedFor is how long the address is still out.
func ejectedFor(a *Address) time.Duration { return time.Until(time.Unix(0, a.ejected.Load())) }

// Requests go to the address with the fewest in flight, ties taken in turn.
func TestLeastOutstanding(t *testing.T) {
	c, a, b := twoAddresses(t, newTestHealth(t, HealthOptions{}))
	a.Begin()
	for range 10 {
		if got := c.Pick(); got != b {
			t.Fatalf("picked %v, want b (a has a request in flight)", got)
		}
	}
	a.End()
	seen := map[*Address]int{}
	for range 10 {
		seen[c.Pick()]++
	}
	if seen[a] != 5 || seen[b] != 5 {
		t.Errorf("ties: %d to a, %d to b, want taken in turn", seen[a], seen[b])
	}
}

// A failed connect ejects at once, for a back-off that doubles while ejections follow one another
// (the failures of requests in flight together count once) up to ejectMax; an answer ends the
// streak. The metric, the log and the state name the evidence.
func TestConnectFailureEjectsAtOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	var log bytes.Buffer
	h := newTestHealth(t, HealthOptions{Registerer: reg, Log: slog.New(slog.NewTextHandler(&log, nil))})
	c, a, b := twoAddresses(t, h)
	h.Use([]*CellHealth{c})

	c.ConnectFailed(a)
	first := ejectedFor(a)
	if first <= 0 || first > ejectBase {
		t.Fatalf("after one failed connect: out for %v, want up to %v", first, ejectBase)
	}
	c.ConnectFailed(a) // a failure of a request in flight with the first: no longer
	if again := ejectedFor(a); again > first {
		t.Errorf("a second failure while out made the back-off %v, want it to stay %v", again, first)
	}
	a.ejected.Store(time.Now().Add(-time.Millisecond).UnixNano()) // the back-off is over
	c.ConnectFailed(a)
	if second := ejectedFor(a); second <= first || second > 2*ejectBase {
		t.Errorf("back-off %v then %v, want %v then twice that", first, second, ejectBase)
	}
	if s := c.State()[0]; s.EjectedBy != "connect" || s.Up || s.EjectedUntil.IsZero() {
		t.Errorf("state %+v, want ejected by connect", s)
	}
	if got := testutil.ToFloat64(h.ejections.WithLabelValues("1", "connect")); got != 2 {
		t.Errorf(`edge_cell_ejections_total{evidence="connect"} = %v, want 2`, got)
	}
	if got := testutil.ToFloat64(h.ejections.WithLabelValues("1", "gateway")); got != 0 {
		t.Errorf(`edge_cell_ejections_total{evidence="gateway"} = %v, want 0`, got)
	}
	if !strings.Contains(log.String(), "evidence=connect") || !strings.Contains(log.String(), "a connect failed") {
		t.Errorf("log does not name the evidence:\n%s", log.String())
	}
	a.Answered()
	if a.ejections.Load() != 0 {
		t.Error("an answer did not end the back-off's streak")
	}
	for i := range 30 {
		b.ejected.Store(1)
		c.ConnectFailed(b)
		if d := ejectedFor(b); d > ejectMax {
			t.Fatalf("ejection %d: back-off %v over the %v cap", i, d, ejectMax)
		}
	}

	h.Use(nil)
	if n := testutil.CollectAndCount(h.ejections); n != 0 {
		t.Errorf("cell gone: %d ejection series left, want none", n)
	}
}

// Gateway failures eject only the DefaultGatewayFailures-th in a row; an answer of any status
// between ends the streak; the failures of requests in flight when it was ejected do not count.
func TestGatewayFailuresEjectAfterFive(t *testing.T) {
	h := newTestHealth(t, HealthOptions{})
	c, a, _ := twoAddresses(t, h)
	gatewayFailures := func(n int) {
		for range n {
			c.GatewayFailed(a)
		}
	}
	gatewayFailures(DefaultGatewayFailures - 1)
	if a.ejectedNow() {
		t.Fatalf("ejected after %d gateway failures, want %d", DefaultGatewayFailures-1, DefaultGatewayFailures)
	}
	if s := c.State()[0]; !s.Up || s.GatewayFailures != DefaultGatewayFailures-1 {
		t.Errorf("state %+v, want up with %d gateway failures", s, DefaultGatewayFailures-1)
	}
	a.Answered()
	gatewayFailures(DefaultGatewayFailures - 1)
	if a.ejectedNow() {
		t.Fatal("ejected though an answer came between the failures")
	}
	gatewayFailures(1)
	if !a.ejectedNow() {
		t.Fatalf("not ejected after %d gateway failures in a row", DefaultGatewayFailures)
	}
	if d := ejectedFor(a); d > ejectBase {
		t.Errorf("first gateway ejection: out for %v, want up to %v", d, ejectBase)
	}
	if s := c.State()[0]; s.EjectedBy != "gateway" || s.GatewayFailures != 0 {
		t.Errorf("state %+v, want ejected by gateway with the streak reset", s)
	}
	if got := testutil.ToFloat64(h.ejections.WithLabelValues("1", "gateway")); got != 1 {
		t.Errorf(`edge_cell_ejections_total{evidence="gateway"} = %v, want 1`, got)
	}
	gatewayFailures(3 * DefaultGatewayFailures) // requests in flight when it went out
	if a.gateway.Load() != 0 || testutil.ToFloat64(h.ejections.WithLabelValues("1", "gateway")) != 1 {
		t.Error("failures while ejected counted")
	}
}

// HealthOptions.GatewayFailures sets the streak that ejects; it cannot be negative.
func TestGatewayFailuresOption(t *testing.T) {
	c, a, _ := twoAddresses(t, newTestHealth(t, HealthOptions{GatewayFailures: 2}))
	c.GatewayFailed(a)
	if a.ejectedNow() {
		t.Fatal("ejected after one of two")
	}
	c.GatewayFailed(a)
	if !a.ejectedNow() {
		t.Fatal("not ejected after two of two")
	}
	if _, err := NewHealth(HealthOptions{GatewayFailures: -1}); !errors.Is(err, ErrBadHealthOptions) {
		t.Errorf("GatewayFailures -1: %v, want ErrBadHealthOptions", err)
	}
}

// With one address of two ejected, requests go to the other: the dead one is left out.
func TestEjectedAddressLeftOut(t *testing.T) {
	c, a, b := twoAddresses(t, newTestHealth(t, HealthOptions{}))
	c.ConnectFailed(a)
	for range 10 {
		if got := c.Pick(); got != b {
			t.Fatalf("picked %v while a is ejected and b is not", got)
		}
	}
	if c.Degraded() || !c.Up() {
		t.Errorf("one address of two ejected: up %v degraded %v, want up and not degraded", c.Up(), c.Degraded())
	}
}

// Passive evidence never takes a cell's last usable address out: with every address not held
// down by checks ejected, Pick returns the one with the fewest in flight among them, and the
// cell is up, degraded.
func TestPassiveEvidenceKeepsLastAddress(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newTestHealth(t, HealthOptions{Registerer: reg})
	one := h.Cell(3, []*url.URL{mustURL(t, "http://only:1")}, nil)
	h.Use([]*CellHealth{one})
	one.ConnectFailed(one.Addrs[0])
	if got := one.Pick(); got != one.Addrs[0] {
		t.Errorf("one address, ejected by a connect: picked %v, want it anyway", got)
	}
	for range DefaultGatewayFailures {
		one.Addrs[0].ejected.Store(1)
		one.GatewayFailed(one.Addrs[0])
	}
	if got := one.Pick(); got != one.Addrs[0] || !one.Addrs[0].ejectedNow() {
		t.Errorf("one address, ejected by gateway failures: picked %v, want it anyway", got)
	}
	if !one.Up() || !one.Degraded() {
		t.Errorf("up %v degraded %v, want up and degraded", one.Up(), one.Degraded())
	}
	if got := gauge(t, reg, "edge_cell_up"); got != 1 {
		t.Errorf("edge_cell_up = %v with its only address passively ejected, want 1", got)
	}

	c, a, b := twoAddresses(t, h)
	c.ConnectFailed(a)
	c.GatewayFailed(b) // not enough alone
	for range DefaultGatewayFailures {
		c.GatewayFailed(b)
	}
	if !a.ejectedNow() || !b.ejectedNow() {
		t.Fatal("both addresses should be ejected")
	}
	a.Begin()
	for range 10 {
		if got := c.Pick(); got != b {
			t.Fatalf("both ejected: picked %v, want b (fewest in flight)", got)
		}
	}
	if got := c.Pick(b); got != a {
		t.Errorf("both ejected, b tried: picked %v, want a", got)
	}
	a.End()
	if !c.Up() || !c.Degraded() {
		t.Errorf("both ejected: up %v degraded %v, want up and degraded", c.Up(), c.Degraded())
	}
}

// An address its checks hold down is never picked, ejected others or not; a cell whose every
// address they hold down is down, with Retry-After until the next check.
func TestCheckedDownNeverPicked(t *testing.T) {
	c, a, b := twoAddresses(t, newTestHealth(t, HealthOptions{}))
	a.checkedDown.Store(true)
	c.ConnectFailed(b)
	for range 10 {
		if got := c.Pick(); got != b {
			t.Fatalf("picked %v, want the ejected b over the checked-down a", got)
		}
	}
	if got := c.Pick(b); got != nil {
		t.Errorf("b tried: picked %v, want none (a is checked down)", got)
	}
	b.checkedDown.Store(true)
	if got := c.Pick(); got != nil {
		t.Errorf("both checked down: picked %v, want none", got)
	}
	if c.Up() || c.Degraded() {
		t.Errorf("both checked down: up %v degraded %v, want down", c.Up(), c.Degraded())
	}
	next := time.Now().Add(3 * time.Second).UnixNano()
	a.nextCheck.Store(next)
	b.nextCheck.Store(next + int64(time.Second))
	if ra := c.RetryAfter(); ra < 2*time.Second || ra > 3*time.Second {
		t.Errorf("RetryAfter %v, want until a's next check, 3s away", ra)
	}
	one := newTestHealth(t, HealthOptions{}).Cell(2, []*url.URL{mustURL(t, "http://only:1")}, nil)
	one.Addrs[0].checkedDown.Store(true)
	if got := one.Pick(); got != nil {
		t.Errorf("one address, checked down: picked %v, want none", got)
	}
}
