// Package registrytest holds the contract every registry.Registry meets (Run) and
// the helpers to run it: edges with their own metrics.
package registrytest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"gitlab.com/edge/edge/registry"
)

// NewEdge makes the registry of one edge instance on the current test's backend; all edges made
// by one NewEdge share that backend, as edge instances share one Redis. It must pass opts through
// unchanged (the suite sets the timings and the metrics registerer) and must not start Run.
type NewEdge func(t *testing.T, self string, opts registry.Options) registry.Registry

// Edge is a registry whose Run runs until Stop or the end of the test.
type Edge struct {
	registry.Registry
	Self    string
	Metrics *prometheus.Registry
	cancel  context.CancelFunc
	done    chan error
}

// StartEdge makes an edge with newEdge, with its own metrics registry, and starts its Run.
func StartEdge(t *testing.T, newEdge NewEdge, self string, opts registry.Options) *Edge {
	t.Helper()
	e := &Edge{Self: self, Metrics: prometheus.NewRegistry(), done: make(chan error, 1)}
	opts.Self = self
	opts.Registerer = e.Metrics
	e.Registry = newEdge(t, self, opts)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.done <- e.Run(ctx) }()
	t.Cleanup(func() { e.Stop(t) })
	return e
}

// Stop ends Run, as if the edge had crashed: its entries stay until they expire.
func (e *Edge) Stop(t *testing.T) {
	t.Helper()
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case err := <-e.done:
		if err != nil {
			t.Errorf("edge %s: Run: %v", e.Self, err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("edge %s: Run did not return within 10s of its context ending", e.Self)
	}
}

// Metric returns the value of the counter or gauge name whose op label is op ("" for metrics
// without that label), 0 when absent.
func (e *Edge) Metric(t *testing.T, name, op string) float64 {
	t.Helper()
	families, err := e.Metrics.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m.GetLabel(), "op") != op {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func labelValue(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
