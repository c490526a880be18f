package workspaceauth

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts logins, authorization answers, cache use, revocations and open WebSockets. A nil
// *Metrics counts nothing.
type Metrics struct {
	logins    *prometheus.CounterVec // outcome
	decisions *prometheus.CounterVec // decision: allowed, denied, error
	cache     *prometheus.CounterVec // result: hit, miss
	revoked   prometheus.Counter
	sockets   prometheus.Gauge
}

// NewMetrics registers the metrics with reg; a nil reg gets a registry of its own (nothing
// exported).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_workspace_logins_total", Help: "Workspace logins by outcome (ok, denied, error, bad_state, other_browser, busy: refused over the limits of logins in flight, logout_refused: a logout from another origin, ...).",
		}, []string{"outcome"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_workspace_authorizations_total", Help: "Answers of the workspace authorizer (not from the cache) by decision (allowed, denied, error).",
		}, []string{"decision"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_workspace_authz_cache_total", Help: "Workspace authorization lookups in the decision cache by result (hit, miss).",
		}, []string{"result"}),
		revoked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_workspace_sessions_revoked_total", Help: "Workspace sessions ended because a recheck denied access or had no answer.",
		}),
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_workspace_websockets_open", Help: "WebSockets open to workspaces.",
		}),
	}
	// Label values exist from the start, so a rate over them works before the first event.
	for _, o := range []string{"ok", "denied", "error", "bad_state", "other_browser", "busy", "logout_refused"} {
		m.logins.WithLabelValues(o)
	}
	for _, d := range []string{"allowed", "denied", "error"} {
		m.decisions.WithLabelValues(d)
	}
	for _, r := range []string{"hit", "miss"} {
		m.cache.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.logins, m.decisions, m.cache, m.revoked, m.sockets} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("workspaceauth: register metrics: %w", err)
		}
	}
	return m, nil
}

// Login counts one login by its outcome.
func (m *Metrics) Login(outcome string) {
	if m != nil {
		m.logins.WithLabelValues(outcome).Inc()
	}
}

// Decision counts one authorizer answer: allowed, denied (ErrNotFound included) or error.
func (m *Metrics) Decision(d Decision, err error) {
	if m == nil {
		return
	}
	label := "denied"
	switch {
	case err == nil && d.Allowed:
		label = "allowed"
	case err != nil && !errors.Is(err, ErrNotFound):
		label = "error"
	}
	m.decisions.WithLabelValues(label).Inc()
}

func (m *Metrics) cacheHit(hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.cache.WithLabelValues("hit").Inc()
	} else {
		m.cache.WithLabelValues("miss").Inc()
	}
}

// Revoked counts a session ended by a recheck.
func (m *Metrics) Revoked() {
	if m != nil {
		m.revoked.Inc()
	}
}

// WebSocketOpened and WebSocketClosed track the WebSockets open to workspaces.
func (m *Metrics) WebSocketOpened() {
	if m != nil {
		m.sockets.Inc()
	}
}

func (m *Metrics) WebSocketClosed() {
	if m != nil {
		m.sockets.Dec()
	}
}
