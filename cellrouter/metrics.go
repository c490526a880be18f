package cellrouter

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the cell router's Prometheus collectors, registered on a registerer that is passed in.
type Metrics struct {
	// Requests is edge_requests_total, which the front counts its refusals in too.
	Requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	inFlight       *prometheus.GaugeVec
	decisions      *prometheus.CounterVec
	upstreamErrors *prometheus.CounterVec
	learnedJobs    prometheus.Counter
	signals        *queueSignals
	admission      *admissionMetrics

	// Children resolved once, so the request path does no label hashing.
	inFlightBy  [2]prometheus.Gauge
	durationBy  [2][numEndpoints]prometheus.Observer
	decisionsBy [16][8][16]atomic.Pointer[counterBox]
}

type counterBox struct{ prometheus.Counter }

// decision counts one routing decision; rule -1 means refused.
func (m *Metrics) decision(source TokenSource, kind TokenKind, rule Rule, refused bool) {
	r := int(rule)
	if refused {
		r = 15
	}
	slot := &m.decisionsBy[source&15][kind&7][r&15]
	box := slot.Load()
	if box == nil {
		label := rule.String()
		if refused {
			label = "refused"
		}
		box = &counterBox{m.decisions.WithLabelValues(source.String(), kind.String(), label)}
		slot.Store(box)
	}
	box.Inc()
}

func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_requests_total",
			Help: "Requests answered, by traffic kind, target and status class.",
		}, []string{"kind", "target", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "edge_request_duration_seconds",
			Help:    "Time from request to the end of the answer, by traffic kind and route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"kind", "route"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "edge_requests_in_flight",
			Help: "Requests being served now, long polls included.",
		}, []string{"kind"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_routing_decisions_total",
			Help: "Routing decisions by where the token was, its kind and the rule that picked the target.",
		}, []string{"source", "token_kind", "rule"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_upstream_errors_total",
			Help: "Requests that failed between edge and the target, by target and cause.",
		}, []string{"target", "cause"}),
		learnedJobs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_learned_job_ids_total",
			Help: "Job ids learned from jobs/request answers.",
		}),
		signals:   newQueueSignals(),
		admission: newAdmissionMetrics(),
	}
	collectors := []prometheus.Collector{m.Requests, m.duration, m.inFlight, m.decisions, m.upstreamErrors, m.learnedJobs}
	collectors = append(append(collectors, m.signals.collectors()...), m.admission.collectors()...)
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for kind := range m.inFlightBy {
		m.inFlightBy[kind] = m.inFlight.WithLabelValues(TrafficKind(kind).String())
		for route := range m.durationBy[kind] {
			if TrafficKind(kind) == TrafficRunner || endpoint(route) == endpointOther {
				m.durationBy[kind][route] = m.duration.WithLabelValues(TrafficKind(kind).String(), endpoint(route).String())
			}
		}
	}
	return m, nil
}
