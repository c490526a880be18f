package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/proxy"
	"gitlab.com/edge/edge/tracing"
)

// Options are what the command line adds to the config.
type Options struct {
	Path string // the config file, read again on every reload
	// AdvertiseInternal overrides listen.advertise_internal, on every reload too.
	AdvertiseInternal string
	Build             BuildInfo
	Log               io.Writer // the logs, access lines included
	// Reload asks for a reload, as a changed file does: cmd/edge sends SIGHUP here. Nil: only
	// file changes reload.
	Reload <-chan os.Signal
}

// Load reads the config file with what the flags set over it, as every reload does.
func (o Options) Load() (*config.Config, error) {
	cfg, err := LoadConfig(o.Path)
	if err != nil {
		return nil, err
	}
	o.override(cfg)
	return cfg, nil
}

func (o Options) override(cfg *config.Config) {
	if o.AdvertiseInternal != "" {
		cfg.Listen.AdvertiseInternal = o.AdvertiseInternal
	}
}

// deps are what every module's factory gets.
type deps struct {
	log    *slog.Logger
	reg    prometheus.Registerer
	front  *proxy.Front
	opts   Options
	tracer *tracing.Tracer // nil: no spans
	guard  *guard.Guard    // every goroutine a module starts runs under it
}

// edge is the modules of one process and the front door they add their routes to, with the
// parts the status page reads.
type edge struct {
	front       *proxy.Front
	modules     []module
	reload      *reloader
	log         *slog.Logger
	guard       *guard.Guard // the deps' guard, for the listeners and the reload
	health      *health
	runner      *runner
	agents      *agents
	aggregation *aggregation
	tls         *publicTLS
}

// build makes every module from cfg, in the order their stages run within a phase, and puts
// the first route table in force. A new feature is one more line here.
func build(cfg *config.Config, opts Options, log *slog.Logger, reg *prometheus.Registry) (*edge, error) {
	e := &edge{log: log}
	g, err := guard.New(log, reg)
	if err != nil {
		return nil, err
	}
	d := deps{log: log, reg: reg, opts: opts, guard: g}
	e.guard = g
	tracer, tracingModule, err := newTracing(cfg, opts.Build)
	if err != nil {
		return nil, err
	}
	d.tracer = tracer
	r, err := newRunner(cfg, d)
	if err != nil {
		return nil, err
	}
	e.front = proxy.NewFront(log, r.metrics)
	e.front.UseGuard(g)
	e.front.UseTracer(tracer)
	d.front = e.front
	agents, err := newAgents(cfg, d)
	if err != nil {
		return nil, err
	}
	r.agents = agents.router
	ws, err := newWorkspaces(cfg, d, agents)
	if err != nil {
		return nil, err
	}
	agg, err := newAggregation(cfg, d)
	if err != nil {
		return nil, err
	}
	ssh, err := newSSH(cfg, d, ws, agents)
	if err != nil {
		return nil, err
	}
	tls, err := newTLS(cfg, d, ws)
	if err != nil {
		return nil, err
	}
	if e.reload, err = newReloader(cfg, opts, e, log, reg); err != nil {
		return nil, err
	}
	e.health, e.runner, e.agents, e.aggregation, e.tls = &health{}, r, agents, agg, tls
	e.modules = []module{
		tracingModule,
		newFront(cfg, d, tls.config),
		r.module(), agents.module(), ws.module(), agg.module(), ssh, tls.module(),
		newOps(cfg, d, opsParts{reg: reg, health: e.health, registryHealthy: agents.registry.Healthy, grace: e.reload.grace, status: e.status}),
		e.reload.module(),
	}
	next, err := e.routes(cfg)
	if err != nil {
		return nil, err
	}
	return e, e.apply(next)
}

// routes builds every module's routes of one config; nothing is in force until apply.
func (e *edge) routes(cfg *config.Config) (*table, error) {
	next := &table{routes: &proxy.Routes{}}
	for _, m := range e.modules {
		if m.routes == nil {
			continue
		}
		if err := m.routes(cfg, next); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// apply puts a route table in force: new requests and new agent connections see it, those in
// flight finish on the one they started with.
func (e *edge) apply(next *table) error {
	for _, f := range next.commits {
		f()
	}
	return e.front.Swap(next.routes)
}

// Serve runs edge until ctx ends (cmd/edge: SIGTERM/SIGINT), then drains: /readyz turns 503, registry
// entries go, the listeners stop accepting, and requests in flight, long polls included, get up
// to shutdown.grace to finish. The modules' stages start in order and stop in reverse.
func Serve(ctx context.Context, cfg *config.Config, opts Options) error {
	log := NewLogger(cfg.Log, opts.Log)
	reg := NewRegistry(opts.Build)
	e, err := build(cfg, opts, log, reg)
	if err != nil {
		return err
	}
	logStartup(log, cfg, opts)
	if err := openListeners(e.modules); err != nil {
		return err
	}
	errc := make(chan error, 16)
	st := &stages{log: log, guard: e.guard}
	if err := st.start(ctx, ordered(e.modules, errc, log, e.guard)); err != nil {
		return err
	}
	select {
	case err = <-errc:
		log.Error("listener failed", "error", err)
	case <-ctx.Done():
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), e.reload.grace())
	defer cancel()
	st.stop(drainCtx)
	log.Info("stopped")
	return err
}

// Check builds every module from cfg as Serve would, without starting any.
func Check(cfg *config.Config) error {
	_, err := build(cfg, Options{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	return err
}

// Explain is the routing decision for one request under cfg, as `edge serve` would make it.
func Explain(cfg *config.Config, req *http.Request, log *slog.Logger) (proxy.Explanation, error) {
	e, err := build(cfg, Options{}, log, prometheus.NewRegistry())
	if err != nil {
		return proxy.Explanation{}, err
	}
	return e.front.Explain(req), nil
}
