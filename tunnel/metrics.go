package tunnel

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type serverMetrics struct {
	connections   prometheus.Gauge       // connections taking requests
	handshakes    prometheus.Gauge       // upgraded, handshake not done
	connects      *prometheus.CounterVec // result
	streams       prometheus.Gauge       // requests in flight
	requests      *prometheus.CounterVec // result
	spliceStreams *prometheus.CounterVec // result
}

func newServerMetrics(reg prometheus.Registerer) (*serverMetrics, error) {
	m := &serverMetrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_tunnel_connections", Help: "Agent tunnel connections held by this edge and taking requests.",
		}),
		handshakes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_tunnel_handshakes", Help: "Agent connections upgraded and waiting for their tunnel handshake (not taking requests).",
		}),
		connects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_tunnel_connects_total", Help: "Agent connect attempts by result (ok, unauthorized, bad_request, draining, too_many_connections, handshake_timeout, error).",
		}, []string{"result"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_tunnel_streams", Help: "Requests in flight through agent tunnels.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_tunnel_requests_total", Help: "Requests sent into agent tunnels by result (ok, too_many_streams, not_connected, error).",
		}, []string{"result"}),
		spliceStreams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_tunnel_splice_streams_total", Help: "Splice streams opened to agents by result (ok, refused, error); each carries many requests, one after another.",
		}, []string{"result"}),
	}
	// Each result exists at 0 from the start: a rule or panel on them reads 0, not nothing.
	for _, r := range []string{"ok", "unauthorized", "bad_request", "not_upgradable", "draining", "too_many_connections", "handshake_timeout", "error"} {
		m.connects.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "too_many_streams", "not_connected", "error"} {
		m.requests.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "refused", "error"} {
		m.spliceStreams.WithLabelValues(r)
	}
	return m, register(reg, m.connections, m.handshakes, m.connects, m.streams, m.requests, m.spliceStreams)
}

type agentMetrics struct {
	connections prometheus.Gauge       // sessions up
	connects    *prometheus.CounterVec // result
	streams     prometheus.Gauge       // requests in flight to upstreams
	requests    *prometheus.CounterVec // result
}

func newAgentMetrics(reg prometheus.Registerer) (*agentMetrics, error) {
	m := &agentMetrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_agent_connections", Help: "Tunnel connections from this agent to the edge.",
		}),
		connects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_agent_connects_total", Help: "Connect attempts to the edge by result (ok, unauthorized, error).",
		}, []string{"result"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_agent_streams", Help: "Requests from the tunnel in flight to upstreams (a splice or tcp stream counts while it is open).",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_agent_requests_total", Help: "Requests from the tunnel by result (ok, bad_request, forbidden, upstream_error; tcp and splice: a stream switched to raw bytes to the upstream, which carries the edge's requests unparsed).",
		}, []string{"result"}),
	}
	return m, register(reg, m.connections, m.connects, m.streams, m.requests)
}

func register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("tunnel: register metrics: %w", err)
		}
	}
	return nil
}
