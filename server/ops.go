package server

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/hop"
)

// health is what /readyz reports: ready once the listeners are up, not ready while draining.
type health struct {
	ready    atomic.Bool
	draining atomic.Bool
}

// opsParts are what the ops listener reports on.
type opsParts struct {
	reg             *prometheus.Registry
	health          *health // newOps makes it
	registryHealthy func() bool
	grace           func() time.Duration // shutdown.grace of the config in force, for the log
	status          func(context.Context) Status
}

// newOps is operations: the ops listener (metrics, liveness, readiness, the status page) and
// readiness itself, whose stop begins the drain.
func newOps(cfg *config.Config, d deps, p opsParts) (module, error) {
	h, grace := &health{}, p.grace
	p.health = h
	// A drain that outlasts its grace by far is stuck: an alert reads this.
	draining := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edge_draining", Help: "1 while this edge drains (not ready, finishing its requests), else 0."},
		func() float64 {
			if h.draining.Load() {
				return 1
			}
			return 0
		})
	if err := d.reg.Register(draining); err != nil {
		return module{}, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second}
	l := httpListener("listen.ops", cfg.Listen.Ops, phaseOps, d.guard.Handler("ops", opsHandler(p)), srv, d.log)
	// Last down, when the drain is over: nothing left to wait for.
	l.shutdown = func(context.Context) { srv.Close() }
	return module{name: "ops",
		settings:  []setting{{name: "listen.ops", same: func(a, b *config.Config) bool { return a.Listen.Ops == b.Listen.Ops }}},
		listeners: []*listener{l},
		stages: []stage{{name: "ready", phase: phaseReady,
			start: func(context.Context, *goroutines) error { h.ready.Store(true); return nil },
			stop: func(context.Context) {
				h.draining.Store(true)
				d.log.Info("draining", "grace", grace().String())
			}}},
		status: statusFunc(func(_ context.Context, s *Status) { s.Edge.Draining = h.draining.Load() }),
	}, nil
}

func opsHandler(p opsParts) http.Handler {
	reg, h, registryHealthy := p.reg, p.health, p.registryHealthy
	mux := http.NewServeMux()
	page := newStatusPage()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) { page.serveHTML(w, p.status(r.Context())) })
	mux.HandleFunc("/status.json", func(w http.ResponseWriter, r *http.Request) { page.serveJSON(w, p.status(r.Context())) })
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case h.draining.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"ready":false,"reason":"draining"}`)
		case !h.ready.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"ready":false,"reason":"starting"}`)
		default:
			// Registry health is reported, not failed on: failing readiness when Redis is down
			// would pull every instance out of the load balancer at once.
			fmt.Fprintf(w, `{"ready":true,"registry_healthy":%t}`+"\n", registryHealthy())
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hop.Write(w, http.StatusNotFound, "not_found", "the ops listener serves /metrics, /healthz, /readyz, /status and /status.json")
	})
	// GET and HEAD only, with the one error body for anything else.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			hop.Write(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not served here")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// NewMetricsRegistry is the Prometheus registry of one process: every metric, edge_build_info
// and the Go and process collectors first; nothing registers globally.
func NewMetricsRegistry(b BuildInfo) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "edge_build_info",
		Help:        "Build information; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion},
	})
	build.Set(1)
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build,
	)
	return reg
}
