package sshproxy

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	logins  *prometheus.CounterVec
	open    prometheus.Gauge
	bytes   *prometheus.CounterVec
	revoked prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_ssh_logins_total",
			Help: "SSH logins into workspaces, by outcome.",
		}, []string{"outcome"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_ssh_sessions_open",
			Help: "SSH connections bridged to a workspace now.",
		}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_ssh_bytes_total",
			Help: "Bytes of SSH channels passed, by direction.",
		}, []string{"direction"}),
		revoked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_ssh_closed_by_revocation_total",
			Help: "SSH connections closed because a recheck denied access.",
		}),
	}
	for _, c := range []prometheus.Collector{m.logins, m.open, m.bytes, m.revoked} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, o := range []string{"ok", "denied", "unknown_workspace", "rate_limited", "error", "host_key_mismatch", "upstream_unreachable", "upstream_error"} {
		m.logins.WithLabelValues(o)
	}
	m.bytes.WithLabelValues("to_workspace")
	m.bytes.WithLabelValues("to_user")
	return m, nil
}
