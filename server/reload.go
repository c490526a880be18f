package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/guard"
)

// reloader applies a changed config file: every module builds its routes of the new config, and
// the whole table takes effect for new requests and agent connections without dropping any
// connection. A bad file is refused with an error log line and the running config stays. A
// changed setting that a module does not apply is named in a warning.
type reloader struct {
	opts       Options
	edge       *edge
	log        *slog.Logger
	guard      *guard.Guard
	mu         sync.Mutex // guards current: the drain reads its grace
	current    *config.Config
	sum        [32]byte
	generation prometheus.Gauge
	reloads    *prometheus.CounterVec
	// What the status page shows: guarded by mu.
	started   time.Time
	configSum string
	last      ReloadStatus
}

// newReloader makes the reload module of e, whose modules it reloads: it reads them at each
// reload, not before.
func newReloader(cfg *config.Config, d deps, e *edge) (*reloader, error) {
	r := &reloader{
		opts: d.opts, edge: e, log: d.log, guard: d.guard, current: cfg,
		started: time.Now(), configSum: fileSum(d.opts.Path), last: ReloadStatus{Result: "none", Generation: 1},
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_config_generation",
			Help: "How many configs this process has applied: 1 at start, +1 per successful reload.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_config_reloads_total",
			Help: "Config reloads by result.",
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{r.generation, r.reloads} {
		if err := d.reg.Register(c); err != nil {
			return nil, err
		}
	}
	r.generation.Set(1)
	r.reloads.WithLabelValues("ok")
	r.reloads.WithLabelValues("error")
	return r, nil
}

// module is the reloader's own: the drain's grace, which a reload applies, and the stage that
// watches the files.
func (r *reloader) module() module {
	return module{name: "reload",
		settings: []setting{{name: "shutdown.grace", reload: true, same: func(a, b *config.Config) bool { return a.Shutdown.Grace == b.Shutdown.Grace }}},
		status:   r,
		stages: []stage{
			{name: "reload", phase: phaseReload,
				start: func(life context.Context, run *goroutines) error {
					r.sum, _ = r.watchedSum(r.current)
					run.Go("reload", func() { r.run(life, 2*time.Second) })
					return nil
				}}},
	}
}

// watchedSum is a digest of the files whose change starts a reload: the config file, and the
// files the modules' settings name (certificates and keys).
func (r *reloader) watchedSum(cfg *config.Config) ([32]byte, error) {
	h := sha256.New()
	files := []string{r.opts.Path}
	for _, m := range r.edge.modules {
		for _, s := range m.settings {
			if s.files != nil {
				files = append(files, s.files(cfg)...)
			}
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return [32]byte{}, err
		}
		s := sha256.Sum256(data)
		h.Write(s[:])
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// run reloads when asked (Options.Reload: cmd/edge's SIGHUP), and when a watched file's content
// changes, whether it was written in place or replaced by a rename (as Kubernetes ConfigMap
// volumes do): it is read again by path each time.
func (r *reloader) run(ctx context.Context, poll time.Duration) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.opts.Reload:
			r.reload("SIGHUP")
		case <-tick.C:
			r.mu.Lock()
			current := r.current
			r.mu.Unlock()
			sum, err := r.watchedSum(current)
			if err != nil {
				continue // mid-swap, or gone: the next tick or a SIGHUP tells
			}
			if !bytes.Equal(sum[:], r.sum[:]) {
				r.reload("file changed")
			}
		}
	}
}

func (r *reloader) reload(why string) {
	log := r.log.With("config", r.opts.Path, "trigger", why)
	// A reload that panics is refused as a bad file is, and the watch goes on; the digest below
	// is taken first, so the same file is not tried again until it changes.
	defer r.guard.Recover("reload", func(bool) { r.refuse(log, ErrReloadCrashed) })
	cfg, err := r.opts.Load()
	// The digest of what was read, whatever came of it: a bad file is not retried until it changes.
	r.sum, _ = r.watchedSum(cmp.Or(cfg, r.current))
	var next *table
	if err == nil {
		next, err = r.edge.routes(cfg)
	}
	if err == nil {
		err = r.edge.apply(next)
	}
	if err != nil {
		r.refuse(log, err)
		return
	}
	changed, restart := verdict(r.edge.modules, r.current, cfg)
	for _, name := range restart {
		log.Warn("setting changed but needs a restart; the running value stays", "setting", name)
	}
	r.mu.Lock()
	r.current = cfg
	r.configSum = fileSum(r.opts.Path)
	r.last = ReloadStatus{Time: time.Now().UTC(), Result: "ok", Generation: r.last.Generation + 1}
	r.mu.Unlock()
	r.generation.Inc()
	r.reloads.WithLabelValues("ok").Inc()
	log.Info("config reloaded", "cells", len(cfg.Cells), "changed", changed)
}

// refuse counts and logs a reload that did not take effect.
func (r *reloader) refuse(log *slog.Logger, err error) {
	r.reloads.WithLabelValues("error").Inc()
	log.Error("config reload refused; the running config stays", "error", err)
	r.mu.Lock()
	r.last = ReloadStatus{Time: time.Now().UTC(), Result: "error", Error: err.Error(), Generation: r.last.Generation}
	r.mu.Unlock()
}

// verdict is the modules' answer to a new config: every setting that changed, and of those the
// ones that need a restart.
func verdict(mods []module, old, next *config.Config) (changed, restart []string) {
	for _, m := range mods {
		for _, s := range m.settings {
			if s.same(old, next) {
				continue
			}
			changed = append(changed, s.name)
			if !s.reload {
				restart = append(restart, s.name)
			}
		}
	}
	return changed, restart
}

// config is the config in force.
func (r *reloader) config() *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// status shows this edge: its build, its config and the last reload (the ops module tells
// whether it drains).
func (r *reloader) status(_ context.Context, s *Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, e, now := r.opts.Build, &s.Edge, time.Now()
	e.Version, e.Commit, e.GoVersion = b.Version, b.Commit, b.GoVersion
	e.Config, e.ConfigSHA256, e.Features = r.opts.Path, r.configSum, features(r.current)
	e.Started, e.Uptime = r.started.UTC(), now.Sub(r.started).Round(time.Second).String()
	e.LastReload = r.last
}

// fileSum is the SHA-256 of a file, hex; "" when it cannot be read.
func fileSum(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// grace is shutdown.grace of the config in force.
func (r *reloader) grace() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current.Shutdown.Grace.Duration
}
