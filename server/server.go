package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/cellrouter"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/tracing"
	"gitlab.com/edge/edge/wire"
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

// deps are what every module's factory gets.
type deps struct {
	log   *slog.Logger
	reg   prometheus.Registerer
	front *front.Front
	// parking takes the public listener's held long polls off its server (wire.Parking).
	parking *wire.Parking
	opts    Options
	tracer  *tracing.Tracer // nil: no spans
	guard   *guard.Guard    // every goroutine a module starts runs under it
}

// edge is the modules of one process and the front door they add their routes to.
type edge struct {
	front   *front.Front
	modules []module
	reload  *reloader
	guard   *guard.Guard // the deps' guard, for the listeners and the reload
	moves   *moves.Table // the organization moves, which explain reads once
}

// build makes every module from cfg, each factory getting the modules it needs, and puts the
// first route table in force. The modules' order is the order their stages run within a phase.
// A new feature is one more factory call here and its module in the list.
func build(cfg *config.Config, opts Options, log *slog.Logger, reg *prometheus.Registry) (*edge, error) {
	g, err := guard.New(log, reg)
	if err != nil {
		return nil, err
	}
	// Each kind of goroutine edge_panics_total counts (README) exists at 0 from the start.
	g.Zero("request", "connection", "fallback server", "engine watch", "parked_poll", "parked_poll_waiter",
		"ops", "redirect", "listener", "tunnel_stream", "tunnel_control", "tunnel_flush", "tunnel_agent", "splice_relay",
		"ssh_session", "ssh_channel", "aggregate_fetch", "aggregate_watch", "workspace_recheck", "registry", "health_check",
		"admission", "workspace_authz", "classify", "reload", "background")
	tracer, tracingModule, err := newTracing(cfg, opts.Build)
	if err != nil {
		return nil, err
	}
	// The cell router's metrics, whose edge_requests_total the front door counts on too.
	metrics, err := cellrouter.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	frontMetrics, err := front.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	e := &edge{guard: g, front: front.New(front.Options{Log: log, Requests: metrics.Requests, Tracer: tracer, Guard: g, Metrics: frontMetrics})}
	d := deps{log: log, reg: reg, front: e.front, parking: wire.NewParking(g), opts: opts, tracer: tracer, guard: g}
	if err := registerParking(reg, d.parking); err != nil {
		return nil, err
	}
	cells, err := newCellHealth(cfg, d)
	if err != nil {
		return nil, err
	}
	agents, err := newAgents(cfg, d)
	if err != nil {
		return nil, err
	}
	e.moves = agents.moves
	adm := newAdmission(d, agents.router)
	r := newRunner(cfg, d, metrics, cells, adm, agents.moves)
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
	if e.reload, err = newReloader(cfg, d, e); err != nil {
		return nil, err
	}
	ops, err := newOps(cfg, d, opsParts{reg: reg, registryHealthy: agents.registry.Healthy, grace: e.reload.grace, status: e.status})
	if err != nil {
		return nil, err
	}
	e.modules = []module{
		tracingModule,
		newFront(cfg, d, tls.config),
		cells.module(), adm.module(), r.module(), agents.module(), ws.module(), agg.module(), ssh, tls.module(),
		ops,
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
	next := &table{routes: &front.Routes{}}
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
	reg := NewMetricsRegistry(opts.Build)
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
func Explain(cfg *config.Config, req *http.Request, log *slog.Logger) (front.Explanation, error) {
	e, err := build(cfg, Options{}, log, prometheus.NewRegistry())
	if err != nil {
		return front.Explanation{}, err
	}
	// The fleet's organization moves, read once (registry.redis): a move decides as it would
	// for a served request. Without the store the explanation is the one with no move.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := e.moves.Resync(ctx); err != nil {
		log.Warn("explain: organization moves not read", "error", err)
	}
	return e.front.Explain(req), nil
}
