package discovery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

// Check is a cell's active health check (config.HealthCheck, resolved).
type Check struct {
	Path                         string
	Interval, Timeout            time.Duration
	HealthyAfter, UnhealthyAfter int
}

// Address is one address of a cell and what edge knows of its health. It is safe for concurrent
// use; the request path reads it without locks.
type Address struct {
	URL         *url.URL
	label       string
	checkedDown atomic.Bool  // failed UnhealthyAfter checks in a row, until HealthyAfter pass
	ejected     atomic.Int64 // unix nanoseconds until which passive evidence has it out; 0: never
	ejectedBy   atomic.Int32 // the Evidence of the latest ejection
	ejections   atomic.Int32 // ejections in a row, with no answer or passing check between
	gateway     atomic.Int32 // gateway failures in a row, with no answer between
	outstanding atomic.Int64 // requests in flight
	nextCheck   atomic.Int64 // unix nanoseconds of the next active check; 0: none planned
	passes      int          // check streaks: only the checker touches them
	fails       int
}

// usable tells whether the address has no evidence against it: its checks do not hold it down
// and no ejection is in force.
func (a *Address) usable() bool {
	return !a.checkedDown.Load() && !a.ejectedNow()
}

// ejectedNow tells whether passive evidence has the address out now (the clock is read only
// when it was ever ejected).
func (a *Address) ejectedNow() bool {
	until := a.ejected.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// Begin and End bracket a request to the address (least outstanding requests picks by them).
func (a *Address) Begin() { a.outstanding.Add(1) }
func (a *Address) End()   { a.outstanding.Add(-1) }

// Answered records an answer, whatever its status: the gateway-failure streak and the
// back-off's streak end (an ejection in force runs its course).
func (a *Address) Answered() {
	if a.gateway.Load() != 0 {
		a.gateway.Store(0)
	}
	if a.ejections.Load() != 0 {
		a.ejections.Store(0)
	}
}

// String is the address as metrics and logs name it.
func (a *Address) String() string { return a.label }

// CellHealth is the health of one cell's addresses.
type CellHealth struct {
	ID           uint64
	Addrs        []*Address
	check        *Check
	key          string
	next         atomic.Uint32
	gatewayLimit int32 // gateway failures in a row that eject
	ejections    [evidenceKinds]prometheus.Counter
	log          *slog.Logger
	stop         context.CancelFunc // of its checks while in force
	recent       recent
}

// Pick is the address with the fewest requests in flight (ties taken in turn) among those with
// no evidence against them, skipping those in tried. When passive evidence has every address
// out that the checks do not hold down, it is the one with the fewest in flight among those
// anyway: passive evidence never leaves a cell without an address (edge dials it, as Envoy does
// below its panic threshold). Nil only when the checks hold down every address not in tried.
func (c *CellHealth) Pick(tried ...*Address) *Address {
	if len(c.Addrs) == 1 && len(tried) == 0 {
		if a := c.Addrs[0]; !a.checkedDown.Load() {
			return a
		}
		return nil
	}
	var best, ejected *Address
	start := int(c.next.Add(1))
	for i := range c.Addrs {
		a := c.Addrs[(start+i)%len(c.Addrs)]
		if a.checkedDown.Load() || contains(tried, a) {
			continue
		}
		if a.ejectedNow() {
			if ejected == nil || a.outstanding.Load() < ejected.outstanding.Load() {
				ejected = a
			}
			continue
		}
		if best == nil || a.outstanding.Load() < best.outstanding.Load() {
			best = a
		}
	}
	if best == nil {
		return ejected
	}
	return best
}

func contains(list []*Address, a *Address) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// Up tells whether edge sends the cell's requests anywhere: some address is not held down by
// its checks. Passive ejection alone never makes a cell down (see Pick).
func (c *CellHealth) Up() bool {
	for _, a := range c.Addrs {
		if !a.checkedDown.Load() {
			return true
		}
	}
	return false
}

// Degraded tells whether the cell is up only through addresses passive evidence has out: every
// address its checks do not hold down is ejected, and edge dials them anyway.
func (c *CellHealth) Degraded() bool {
	up := false
	for _, a := range c.Addrs {
		if a.checkedDown.Load() {
			continue
		}
		if !a.ejectedNow() {
			return false
		}
		up = true
	}
	return up
}

// RetryAfter is how long until an address of a cell that is not up may be usable again: the
// soonest next check of an address its checks hold down (only checks take a cell down). At least
// a second.
func (c *CellHealth) RetryAfter() time.Duration {
	now := time.Now().UnixNano()
	soonest := int64(math.MaxInt64)
	for _, a := range c.Addrs {
		at := now
		if a.checkedDown.Load() {
			at = a.nextCheck.Load()
		}
		soonest = min(soonest, at)
	}
	return max(time.Duration(soonest-now), time.Second)
}

// Checked reports whether the cell has active checks.
func (c *CellHealth) Checked() bool { return c.check != nil }

// AddressState is one address as the status page shows it. Up: no evidence against it (its
// checks pass or there are none, and no ejection is in force). An ejected address may still be
// sent requests, as the last one its cell has (CellHealth.Pick).
type AddressState struct {
	URL          string    `json:"url"`
	Up           bool      `json:"up"`
	CheckedDown  bool      `json:"checked_down"`
	EjectedUntil time.Time `json:"ejected_until,omitzero"`
	// EjectedBy is the evidence of the ejection in force: "connect" or "gateway"; empty when none.
	EjectedBy string `json:"ejected_by,omitempty"`
	// GatewayFailures are the resets and EOFs after a request went out since the last answer.
	GatewayFailures int   `json:"gateway_failures"`
	InFlight        int64 `json:"in_flight"`
}

// State is every address of the cell as it stands now.
func (c *CellHealth) State() []AddressState {
	now := time.Now().UnixNano()
	out := make([]AddressState, 0, len(c.Addrs))
	for _, a := range c.Addrs {
		s := AddressState{URL: a.label, Up: a.usable(), CheckedDown: a.checkedDown.Load(),
			GatewayFailures: int(a.gateway.Load()), InFlight: a.outstanding.Load()}
		if until := a.ejected.Load(); until > now {
			s.EjectedUntil = time.Unix(0, until).UTC()
			s.EjectedBy = Evidence(a.ejectedBy.Load()).String()
		}
		out = append(out, s)
	}
	return out
}

// HealthOptions configure a Health.
type HealthOptions struct {
	Registerer prometheus.Registerer // nil: no metrics
	Log        *slog.Logger
	// Transport carries the checks; nil: a transport of its own.
	Transport http.RoundTripper
	// GatewayFailures is how many gateway failures in a row eject an address; 0:
	// DefaultGatewayFailures.
	GatewayFailures int
	// Guard contains the panics of the checks (nil: contained, logged to standard error, not
	// counted): a check that panics records nothing, and the next round checks again.
	Guard *guard.Guard
}

// Health keeps the health of every cell across config reloads and runs their active checks.
type Health struct {
	mu           sync.Mutex
	inForce      map[uint64]*CellHealth
	runCtx       context.Context // nil until Run
	client       *http.Client
	log          *slog.Logger
	gatewayLimit int32
	guard        *guard.Guard
	ejections    *prometheus.CounterVec
	cellUp       *prometheus.Desc
	addrUp       *prometheus.Desc
}

// NewHealth validates o (errors wrap ErrBadHealthOptions) and registers the metrics.
func NewHealth(o HealthOptions) (*Health, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.GatewayFailures == 0:
		o.GatewayFailures = DefaultGatewayFailures
	case o.GatewayFailures < 0 || o.GatewayFailures > math.MaxInt32:
		return nil, fmt.Errorf("%w: gateway failures %d, want 1 or more", ErrBadHealthOptions, o.GatewayFailures)
	}
	if o.Transport == nil {
		o.Transport = &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute, DisableCompression: true}
	}
	h := &Health{
		inForce: map[uint64]*CellHealth{},
		client: &http.Client{Transport: o.Transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		log:          o.Log,
		gatewayLimit: int32(o.GatewayFailures),
		guard:        o.Guard,
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_cell_ejections_total",
			Help: "Addresses of a cell taken out by passive evidence: connect (a connect refused or timed out) or gateway (resets or EOFs after requests went out, several in a row).",
		}, []string{"cell", "evidence"}),
		cellUp: prometheus.NewDesc("edge_cell_up", "1 while edge sends the cell's requests (an address its checks do not hold down, ejected or not), 0 when its checks hold every address down (503 cell_unavailable).", []string{"cell"}, nil),
		addrUp: prometheus.NewDesc("edge_cell_address_up", "1 when nothing is against the address (checks pass, not ejected), 0 when not.", []string{"cell", "address"}, nil),
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{h.ejections, h} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

// Cell is the health of a cell with these addresses and check: the one in force when they are
// the same (a reload keeps what edge knows), a new one otherwise. A new one is checked once Use
// puts it in force.
func (h *Health) Cell(id uint64, urls []*url.URL, check *Check) *CellHealth {
	var key strings.Builder
	for _, u := range urls {
		key.WriteString(u.String() + " ")
	}
	if check != nil {
		key.WriteString(check.Path + " " + check.Interval.String() + " " + check.Timeout.String() + " " +
			strconv.Itoa(check.HealthyAfter) + " " + strconv.Itoa(check.UnhealthyAfter))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.inForce[id]; ok && c.key == key.String() {
		return c
	}
	label := strconv.FormatUint(id, 10)
	c := &CellHealth{ID: id, check: check, key: key.String(), gatewayLimit: h.gatewayLimit, log: h.log}
	for e := EvidenceConnect; e < evidenceKinds; e++ {
		c.ejections[e] = h.ejections.WithLabelValues(label, e.String())
	}
	for _, u := range urls {
		c.Addrs = append(c.Addrs, &Address{URL: u, label: u.String()})
	}
	return c
}

// Use puts these cells' health in force: the checks of new ones start, those of cells gone or
// replaced stop.
func (h *Health) Use(cells []*CellHealth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := make(map[uint64]*CellHealth, len(cells))
	for _, c := range cells {
		next[c.ID] = c
	}
	for id, c := range h.inForce {
		if next[id] != c {
			c.stopChecks()
			if _, kept := next[id]; !kept {
				h.ejections.DeletePartialMatch(prometheus.Labels{"cell": strconv.FormatUint(id, 10)})
			}
		}
	}
	for id, c := range next {
		if h.inForce[id] != c && h.runCtx != nil {
			h.startChecks(c)
		}
	}
	h.inForce = next
}

// Run runs the active checks of the cells in force until ctx ends.
func (h *Health) Run(ctx context.Context) {
	h.mu.Lock()
	h.runCtx = ctx
	for _, c := range h.inForce {
		h.startChecks(c)
	}
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.inForce {
		c.stopChecks()
	}
	h.runCtx = nil
}

func (h *Health) startChecks(c *CellHealth) {
	if c.check == nil {
		return
	}
	ctx, cancel := context.WithCancel(h.runCtx)
	c.stop = cancel
	go func() { defer h.guard.Recover("health_check", nil); c.runChecks(ctx, h.client, h.guard) }()
}

func (c *CellHealth) stopChecks() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// runChecks checks every address each interval, the first time at a random point of the first
// interval and then with ±10% jitter, so that cells are never checked in step.
func (c *CellHealth) runChecks(ctx context.Context, client *http.Client, g *guard.Guard) {
	wait := time.Duration(rand.Int64N(int64(c.check.Interval)))
	for {
		at := time.Now().Add(wait).UnixNano()
		for _, a := range c.Addrs {
			a.nextCheck.Store(at)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var wg sync.WaitGroup
		for _, a := range c.Addrs {
			wg.Go(g.Func("health_check", func() { c.record(a, c.probe(ctx, client, a)) }))
		}
		wg.Wait()
		jitter := c.check.Interval / 10
		wait = c.check.Interval - jitter + time.Duration(rand.Int64N(int64(2*jitter)+1))
	}
}

// probe passes when the address answers the check's path with 2xx within the timeout.
func (c *CellHealth) probe(ctx context.Context, client *http.Client, a *Address) bool {
	ctx, cancel := context.WithTimeout(ctx, c.check.Timeout)
	defer cancel()
	u := *a.URL
	u.Path = strings.TrimSuffix(u.Path, "/") + c.check.Path
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "edge-health-check")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// record moves an address up after HealthyAfter passes in a row, down after UnhealthyAfter
// failures in a row. A pass ends any ejection and the passive streaks.
func (c *CellHealth) record(a *Address, passed bool) {
	if passed {
		a.passes, a.fails = a.passes+1, 0
		if a.ejected.Load() != 0 || a.ejections.Load() != 0 || a.gateway.Load() != 0 {
			a.ejected.Store(0)
			a.ejections.Store(0)
			a.gateway.Store(0)
		}
		if a.checkedDown.Load() && a.passes >= c.check.HealthyAfter {
			a.checkedDown.Store(false)
			c.log.Info("cell address up: its health check passes", "cell", c.ID, "address", a.label)
		}
		return
	}
	a.fails, a.passes = a.fails+1, 0
	if !a.checkedDown.Load() && a.fails >= c.check.UnhealthyAfter {
		a.checkedDown.Store(true)
		c.log.Warn("cell address down: its health check fails", "cell", c.ID, "address", a.label,
			"failures_in_a_row", a.fails)
	}
}

// Describe and Collect make the health of the cells in force metrics: edge_cell_up and
// edge_cell_address_up, read when scraped.
func (h *Health) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.cellUp
	ch <- h.addrUp
}

func (h *Health) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, c := range h.inForce {
		label := strconv.FormatUint(id, 10)
		ch <- prometheus.MustNewConstMetric(h.cellUp, prometheus.GaugeValue, boolValue(c.Up()), label)
		for _, a := range c.Addrs {
			ch <- prometheus.MustNewConstMetric(h.addrUp, prometheus.GaugeValue, boolValue(a.usable()), label, a.label)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// InForce is the health of the cells in force, for the status page.
func (h *Health) InForce() []*CellHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*CellHealth, 0, len(h.inForce))
	for _, c := range h.inForce {
		out = append(out, c)
	}
	return out
}
