package front

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/hop"
)

// Metrics count every request the front serves by its route and status class, and the answers
// edge made itself (those with a cause: refusals, errors, cut answers) by route, class and
// cause: the share of a route's traffic that edge failed, which its alert rules read.
type Metrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	byRoute  sync.Map // route name -> *routeCounters: no label hashing per request
}

// classes are the status classes by status/100, "other" first.
var classes = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

type routeCounters [len(classes)]prometheus.Counter

func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_route_requests_total",
			Help: "Requests the front served, by route and status class (a client gone before its answer counts as 4xx).",
		}, []string{"route", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_route_errors_total",
			Help: "Answers edge made itself (refusals, errors, answers cut short), by route, status class and cause.",
		}, []string{"route", "code", "cause"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// count counts one request at its end.
func (m *Metrics) count(rec *hop.Record) {
	status := rec.StatusOrClosed()
	class := status / 100
	if class < 0 || class >= len(classes) {
		class = 0
	}
	m.route(rec.Route)[class].Inc()
	if rec.Cause != "" {
		m.errors.WithLabelValues(rec.Route, classes[class], rec.Cause).Inc()
	}
}

func (m *Metrics) route(name string) *routeCounters {
	if c, ok := m.byRoute.Load(name); ok {
		return c.(*routeCounters)
	}
	c := &routeCounters{}
	for i, class := range classes {
		c[i] = m.requests.WithLabelValues(name, class)
	}
	actual, _ := m.byRoute.LoadOrStore(name, c)
	return actual.(*routeCounters)
}
