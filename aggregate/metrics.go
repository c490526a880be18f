package aggregate

import (
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count the fan-out by member and outcome, open watch streams, and member latency.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	watches  prometheus.Gauge
	mu       sync.Mutex
	last     map[string]Outcome // by member
}

// Outcome is how a member last answered: its status class ("2xx", ...) or "unreachable".
type Outcome struct {
	Outcome string    `json:"outcome"`
	At      time.Time `json:"at"`
}

// NewMetrics registers the aggregation's metrics (nil reg: a private registry). Register once per
// process: Proxies made on a reload share them.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		last: map[string]Outcome{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_aggregation_member_requests_total",
			Help: "Requests edge sent to member clusters, by member and outcome (the status class, or unreachable).",
		}, []string{"member", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "edge_aggregation_member_duration_seconds",
			Help:    "Time to a member cluster's response headers.",
			Buckets: prometheus.DefBuckets,
		}, []string{"member"}),
		watches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_aggregation_watch_streams",
			Help: "Aggregated watch streams open now.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.watches} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(member string, resp *http.Response, err error, d time.Duration) {
	if m == nil {
		return
	}
	outcome := "unreachable"
	if err == nil {
		outcome = strconv.Itoa(resp.StatusCode/100) + "xx"
	}
	m.requests.WithLabelValues(member, outcome).Inc()
	m.latency.WithLabelValues(member).Observe(d.Seconds())
	m.mu.Lock()
	m.last[member] = Outcome{Outcome: outcome, At: time.Now().UTC()}
	m.mu.Unlock()
}

// Last is how each member last answered, for the status page.
func (m *Metrics) Last() map[string]Outcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.last)
}

func (m *Metrics) watchOpened() {
	if m != nil {
		m.watches.Inc()
	}
}

func (m *Metrics) watchClosed() {
	if m != nil {
		m.watches.Dec()
	}
}
