package workspaceauth

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// metricsValue is the value of one series, or false when there is no such series.
func metricsValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel())*2 != len(labels) {
				continue
			}
			for i, l := range m.GetLabel() {
				if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func newTestMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	return m, reg
}

type metricsSeries struct {
	name   string
	labels []string
	want   float64
}

func (s metricsSeries) check(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	got, ok := metricsValue(t, g, s.name, s.labels...)
	if !ok {
		t.Errorf("%s%v: no such series", s.name, s.labels)
	} else if got != s.want {
		t.Errorf("%s%v: got %v, want %v", s.name, s.labels, got, s.want)
	}
}

// Every series is there, at 0, before anything happens.
func TestMetricsStartAtZero(t *testing.T) {
	_, reg := newTestMetrics(t)
	var series []metricsSeries
	for _, o := range []string{"ok", "denied", "error", "bad_state", "other_browser", "busy", "logout_refused"} {
		series = append(series, metricsSeries{"edge_workspace_logins_total", []string{"outcome", o}, 0})
	}
	for _, d := range []string{"allowed", "denied", "error"} {
		series = append(series, metricsSeries{"edge_workspace_authorizations_total", []string{"decision", d}, 0})
	}
	for _, r := range []string{"hit", "miss"} {
		series = append(series, metricsSeries{"edge_workspace_authz_cache_total", []string{"result", r}, 0})
	}
	series = append(series,
		metricsSeries{"edge_workspace_sessions_revoked_total", nil, 0},
		metricsSeries{"edge_workspace_websockets_open", nil, 0})
	for _, s := range series {
		t.Run(fmt.Sprint(s.name, s.labels), func(t *testing.T) { s.check(t, reg) })
	}
}

func TestMetricsCount(t *testing.T) {
	m, reg := newTestMetrics(t)
	m.Login("ok")
	m.Login("ok")
	m.Login("bad_state")
	m.Login("provider_error")
	m.Decision(Decision{Allowed: true, AgentID: "a1"}, nil)
	m.Decision(Decision{}, nil)
	m.Decision(Decision{}, fmt.Errorf("%w: %q", ErrNotFound, "ws"))
	m.Decision(Decision{}, fmt.Errorf("%w: status 500", ErrUnavailable))
	m.Decision(Decision{}, errors.New("anything else"))
	m.Decision(Decision{Allowed: true}, errors.New("an error overrides allowed"))
	m.cacheHit(true)
	m.cacheHit(false)
	m.cacheHit(false)
	m.Revoked()
	m.WebSocketOpened()
	m.WebSocketOpened()
	m.WebSocketClosed()

	for _, s := range []metricsSeries{
		{"edge_workspace_logins_total", []string{"outcome", "ok"}, 2},
		{"edge_workspace_logins_total", []string{"outcome", "bad_state"}, 1},
		{"edge_workspace_logins_total", []string{"outcome", "provider_error"}, 1},
		{"edge_workspace_logins_total", []string{"outcome", "denied"}, 0},
		{"edge_workspace_authorizations_total", []string{"decision", "allowed"}, 1},
		{"edge_workspace_authorizations_total", []string{"decision", "denied"}, 2},
		{"edge_workspace_authorizations_total", []string{"decision", "error"}, 3},
		{"edge_workspace_authz_cache_total", []string{"result", "hit"}, 1},
		{"edge_workspace_authz_cache_total", []string{"result", "miss"}, 2},
		{"edge_workspace_sessions_revoked_total", nil, 1},
		{"edge_workspace_websockets_open", nil, 1},
	} {
		t.Run(fmt.Sprint(s.name, s.labels), func(t *testing.T) { s.check(t, reg) })
	}
}

func TestMetricsRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Errorf("NewMetrics twice on one registry: got no error")
	}
	// Without a registry, each gets one of its own.
	for range 2 {
		if _, err := NewMetrics(nil); err != nil {
			t.Errorf("NewMetrics(nil): %v", err)
		}
	}
}

// A nil *Metrics counts nothing, and does not panic.
func TestMetricsNil(t *testing.T) {
	var m *Metrics
	m.Login("ok")
	m.Decision(Decision{}, nil)
	m.cacheHit(true)
	m.Revoked()
	m.WebSocketOpened()
	m.WebSocketClosed()
}
