package server

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/wire"
)

// newFront is the front door's own module: the public listener, its limits, the header policy
// and the access log, and the drain's grace.
func newFront(cfg *config.Config, d deps, tlsConfig func() *tls.Config) module {
	var l *listener
	if cfg.Listen.HTTP1 == config.HTTP1Edge {
		l = engineListener("listen.public", cfg.Listen.Public, phaseTraffic, d.front, limitedServer(cfg.Limits), d.log, d.guard)
	} else {
		l = httpListener("listen.public", cfg.Listen.Public, phaseTraffic, d.front, limitedServer(cfg.Limits), d.log)
	}
	l.max, l.tls = cfg.Limits.MaxConnections, tlsConfig
	parkOn(l, d.parking)
	// Access lines are batched (flushed every 100 ms and when the stage stops, after the
	// listeners): a write per request cost more than the line itself.
	out := newLineBuffer(d.opts.Log)
	access := stage{name: "access log", phase: phaseOps,
		start: func(life context.Context, run *goroutines) error {
			d.front.UseAccessLog(newAccessLog(cfg.Log, out))
			run.Go("background", func() { out.flushEvery(life, 100*time.Millisecond) })
			return nil
		},
		// The last lines go out even when the timed flushes have crashed.
		stop: func(context.Context) { out.Flush() }}
	return module{name: "front",
		settings: []setting{
			{name: "listen.public", same: func(a, b *config.Config) bool { return a.Listen.Public == b.Listen.Public }},
			{name: "limits.read_header_timeout", same: func(a, b *config.Config) bool { return a.Limits.ReadHeaderTimeout == b.Limits.ReadHeaderTimeout }},
			{name: "limits.max_header_bytes", same: func(a, b *config.Config) bool { return a.Limits.MaxHeaderBytes == b.Limits.MaxHeaderBytes }},
			{name: "limits.idle_timeout", same: func(a, b *config.Config) bool { return a.Limits.IdleTimeout == b.Limits.IdleTimeout }},
			{name: "listen.http1", same: func(a, b *config.Config) bool { return a.Listen.HTTP1 == b.Listen.HTTP1 }},
			{name: "limits.max_connections", same: func(a, b *config.Config) bool { return a.Limits.MaxConnections == b.Limits.MaxConnections }},
			{name: "log.level", same: func(a, b *config.Config) bool { return a.Log.Level == b.Log.Level }},
			{name: "log.format", same: func(a, b *config.Config) bool { return a.Log.Format == b.Log.Format }},
			{name: "log.access", reload: true, same: func(a, b *config.Config) bool { return a.Log.AccessLog() == b.Log.AccessLog() }},
		},
		routes: func(cfg *config.Config, next *table) error {
			next.routes.Headers.Trusted = cfg.Routing.TrustedPrefixes
			next.routes.AccessLog = cfg.Log.AccessLog()
			return nil
		},
		listeners: []*listener{l},
		stages:    []stage{access},
		status:    statusFunc(func(_ context.Context, s *Status) { s.Refusals = d.front.Refusals() }),
	}
}

// limitedServer is an HTTP server with the limits of listen.public and listen.internal.
func limitedServer(l config.Limits) *http.Server {
	return &http.Server{
		ReadHeaderTimeout: l.ReadHeaderTimeout.Duration,
		IdleTimeout:       l.IdleTimeout.Duration,
		MaxHeaderBytes:    int(l.MaxHeaderBytes),
	}
}

// parkOn parks the listener's held long polls (wire.Parking): it is served through the parking's
// listener, which takes answered polls' connections back; its drain stops parking, waits for the
// parked polls with the requests in flight, and closes those the grace leaves.
func parkOn(l *listener, pk *wire.Parking) {
	serve, shutdown := l.serve, l.shutdown
	l.serve = func(ln net.Listener, t *tls.Config) error { return serve(pk.Listener(ln), t) }
	l.shutdown = func(ctx context.Context) {
		pk.StopReturning()
		shutdown(ctx)
		pk.Drain(ctx)
	}
}

// registerParking shows the parking on /metrics: the polls parked now, and since the start.
func registerParking(reg prometheus.Registerer, pk *wire.Parking) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edge_parked_polls",
			Help: "jobs/request long polls parked now: held off the HTTP server while their cell holds them."},
			func() float64 { return float64(pk.Held()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edge_parked_polls_total",
			Help: "jobs/request long polls parked since the start."},
			func() float64 { return float64(pk.Parked()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
