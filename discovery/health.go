package discovery

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Check is a cell's active health check (config.HealthCheck, resolved).
type Check struct {
	Path                         string
	Interval, Timeout            time.Duration
	HealthyAfter, UnhealthyAfter int
}

// Ejection back-off: a connection failure takes an address out for ejectBase, doubled for each
// further failure in a row up to ejectMax; an answer or a passing check ends the streak.
const (
	ejectBase = time.Second
	ejectMax  = 30 * time.Second
)

// Address is one address of a cell and what edge knows of its health. It is safe for concurrent
// use; the request path reads it without locks.
type Address struct {
	URL         *url.URL
	label       string
	checkedDown atomic.Bool  // failed UnhealthyAfter checks in a row, until HealthyAfter pass
	ejected     atomic.Int64 // unix nanoseconds until which it is out; 0: never ejected
	failures    atomic.Int32 // connection failures in a row
	outstanding atomic.Int64 // requests in flight
	nextCheck   atomic.Int64 // unix nanoseconds of the next active check; 0: none planned
	passes      int          // check streaks: only the checker touches them
	fails       int
}

// usable tells whether requests may go to the address at now (unix nanoseconds, read only when
// the address was ever ejected).
func (a *Address) usable(now func() int64) bool {
	if a.checkedDown.Load() {
		return false
	}
	until := a.ejected.Load()
	return until == 0 || now() >= until
}

// Begin and End bracket a request to the address (least outstanding requests picks by them).
func (a *Address) Begin() { a.outstanding.Add(1) }
func (a *Address) End()   { a.outstanding.Add(-1) }

// Answered records an answer, whatever its status: the connection-failure streak ends.
func (a *Address) Answered() {
	if a.failures.Load() != 0 {
		a.failures.Store(0)
	}
}

// String is the address as metrics and logs name it.
func (a *Address) String() string { return a.label }

// CellHealth is the health of one cell's addresses.
type CellHealth struct {
	ID        uint64
	Addrs     []*Address
	check     *Check
	key       string
	next      atomic.Uint32
	ejections prometheus.Counter
	log       *slog.Logger
	stop      context.CancelFunc // of its checks while in force
	recent    recent
}

func nowNano() int64 { return time.Now().UnixNano() }

// Pick is the usable address with the fewest requests in flight (ties taken in turn), skipping
// those in tried; nil when none is usable.
func (c *CellHealth) Pick(tried ...*Address) *Address {
	if len(c.Addrs) == 1 && len(tried) == 0 {
		if a := c.Addrs[0]; a.usable(nowNano) {
			return a
		}
		return nil
	}
	var best *Address
	start := int(c.next.Add(1))
	for i := range c.Addrs {
		a := c.Addrs[(start+i)%len(c.Addrs)]
		if !a.usable(nowNano) || contains(tried, a) {
			continue
		}
		if best == nil || a.outstanding.Load() < best.outstanding.Load() {
			best = a
		}
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

// Up tells whether any address is usable.
func (c *CellHealth) Up() bool {
	for _, a := range c.Addrs {
		if a.usable(nowNano) {
			return true
		}
	}
	return false
}

// RetryAfter is how long until an address of the cell may be usable again: its ejection's end,
// or, when a check holds it down, its next check. At least a second.
func (c *CellHealth) RetryAfter() time.Duration {
	now := time.Now().UnixNano()
	var soonest int64
	for _, a := range c.Addrs {
		at := a.ejected.Load()
		if a.checkedDown.Load() {
			at = max(at, a.nextCheck.Load())
		}
		if soonest == 0 || at < soonest {
			soonest = at
		}
	}
	return max(time.Duration(soonest-now), time.Second)
}

// Eject takes the address out after a connection failure, for a back-off that grows while the
// failures go on. The failures of requests that were in flight together count once: an address
// already out stays out as long as it was.
func (c *CellHealth) Eject(a *Address) {
	if a.ejected.Load() > time.Now().UnixNano() {
		return
	}
	n := a.failures.Add(1)
	backoff := ejectMax
	if n <= 6 {
		backoff = min(ejectBase<<(n-1), ejectMax)
	}
	a.ejected.Store(time.Now().Add(backoff).UnixNano())
	c.ejections.Inc()
	c.log.Warn("cell address ejected after a connection failure", "cell", c.ID, "address", a.label,
		"failures_in_a_row", n, "for", backoff)
}

// Checked reports whether the cell has active checks.
func (c *CellHealth) Checked() bool { return c.check != nil }

// AddressState is one address as the status page shows it.
type AddressState struct {
	URL          string    `json:"url"`
	Up           bool      `json:"up"`
	CheckedDown  bool      `json:"checked_down"`
	EjectedUntil time.Time `json:"ejected_until,omitzero"`
	InFlight     int64     `json:"in_flight"`
}

// State is every address of the cell as it stands now.
func (c *CellHealth) State() []AddressState {
	now := time.Now().UnixNano()
	out := make([]AddressState, 0, len(c.Addrs))
	for _, a := range c.Addrs {
		s := AddressState{URL: a.label, Up: a.usable(nowNano), CheckedDown: a.checkedDown.Load(), InFlight: a.outstanding.Load()}
		if until := a.ejected.Load(); until > now {
			s.EjectedUntil = time.Unix(0, until).UTC()
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
}

// Health keeps the health of every cell across config reloads and runs their active checks.
type Health struct {
	mu        sync.Mutex
	inForce   map[uint64]*CellHealth
	runCtx    context.Context // nil until Run
	client    *http.Client
	log       *slog.Logger
	ejections *prometheus.CounterVec
	cellUp    *prometheus.Desc
	addrUp    *prometheus.Desc
}

func NewHealth(o HealthOptions) (*Health, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Transport == nil {
		o.Transport = &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute, DisableCompression: true}
	}
	h := &Health{
		inForce: map[uint64]*CellHealth{},
		client: &http.Client{Transport: o.Transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		log: o.Log,
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_cell_ejections_total",
			Help: "Addresses of a cell taken out after a connection failure.",
		}, []string{"cell"}),
		cellUp: prometheus.NewDesc("edge_cell_up", "1 when the cell has a usable address, 0 when none.", []string{"cell"}, nil),
		addrUp: prometheus.NewDesc("edge_cell_address_up", "1 when the address is usable (checks pass, not ejected), 0 when not.", []string{"cell", "address"}, nil),
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
	c := &CellHealth{ID: id, check: check, key: key.String(), ejections: h.ejections.WithLabelValues(label), log: h.log}
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
				h.ejections.DeleteLabelValues(strconv.FormatUint(id, 10))
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
	go c.runChecks(ctx, h.client)
}

func (c *CellHealth) stopChecks() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// runChecks checks every address each interval, the first time at a random point of the first
// interval and then with ±10% jitter, so that cells are never checked in step.
func (c *CellHealth) runChecks(ctx context.Context, client *http.Client) {
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
			wg.Go(func() { c.record(a, c.probe(ctx, client, a)) })
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

// record moves an address up after HealthyAfter passes in a row (ending any ejection), down
// after UnhealthyAfter failures in a row.
func (c *CellHealth) record(a *Address, passed bool) {
	if passed {
		a.passes, a.fails = a.passes+1, 0
		if a.ejected.Load() != 0 || a.failures.Load() != 0 {
			a.ejected.Store(0)
			a.failures.Store(0)
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
			ch <- prometheus.MustNewConstMetric(h.addrUp, prometheus.GaugeValue, boolValue(a.usable(nowNano)), label, a.label)
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
