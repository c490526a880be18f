package registry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Registry operations, the values of the op label.
const (
	opRegister   = "register"
	opUnregister = "unregister"
	opLookup     = "lookup"
	opByProject  = "by_project"
	opList       = "list"
	opForget     = "forget"
	opRefresh    = "refresh"
	opGC         = "gc"
	opPing       = "ping"
	opDrain      = "drain"
)

type metrics struct {
	ops, errs    *prometheus.CounterVec
	healthy      prometheus.Gauge
	waiters      prometheus.Gauge
	loopsStarted prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, backend string) (*metrics, error) {
	labels := prometheus.Labels{"backend": backend}
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_registry_operations_total", Help: "Agent registry operations by op.", ConstLabels: labels,
		}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_registry_errors_total", Help: "Agent registry operations that failed, by op.", ConstLabels: labels,
		}, []string{"op"}),
		healthy: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_registry_healthy", Help: "1 when the last agent registry store operation succeeded.", ConstLabels: labels,
		}),
		waiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_registry_waiters", Help: "Requests waiting for an agent to connect.", ConstLabels: labels,
		}),
		loopsStarted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_registry_wait_loops_started_total", Help: "Wait loops started (one per waited-for agent at a time).", ConstLabels: labels,
		}),
	}
	for _, op := range []string{opRegister, opUnregister, opLookup, opByProject, opList, opForget, opRefresh, opGC, opPing, opDrain} {
		m.ops.WithLabelValues(op)
		m.errs.WithLabelValues(op)
	}
	m.healthy.Set(1)
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.ops, m.errs, m.healthy, m.waiters, m.loopsStarted} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("%w: metrics: %w", ErrBadOptions, err)
		}
	}
	return m, nil
}
