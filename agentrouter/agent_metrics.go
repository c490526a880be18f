package agentrouter

import "github.com/prometheus/client_golang/prometheus"

type agentMetrics struct {
	forwards *prometheus.CounterVec
	waits    *prometheus.CounterVec
	notHere  prometheus.Counter
	internal *prometheus.CounterVec
	duration prometheus.Histogram
}

func newAgentMetrics(reg prometheus.Registerer) (*agentMetrics, error) {
	m := &agentMetrics{
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_agent_forwards_total",
			Help: "Requests for agents by how they were served: local tunnel, remote edge, or why not.",
		}, []string{"outcome"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_agent_waits_total",
			Help: "Requests that waited for an agent to connect, by outcome.",
		}, []string{"outcome"}),
		notHere: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_agent_not_here_total",
			Help: "Holders that answered 421 not here to this entry edge.",
		}),
		internal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_internal_requests_total",
			Help: "Requests on the internal listener by outcome (served, not_here, refused; splice opens: spliced, no_splice, splice_refused, error).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edge_agent_request_duration_seconds",
			Help:    "Time to serve a request for an agent, waiting included.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.forwards, m.waits, m.notHere, m.internal, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
