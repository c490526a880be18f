package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
)

// reloader applies a changed config file: new cells, job token keys, classify and routing
// limits take effect for new requests without dropping any connection. A bad file is refused
// with an error log line and the running config stays. Listeners, the registry and agents need a
// restart.
type reloader struct {
	path       string
	overrides  overrides
	rt         *router
	current    *config.Config
	sum        [32]byte
	generation prometheus.Gauge
	reloads    *prometheus.CounterVec
	hup        chan os.Signal
}

func newReloader(path string, o overrides, cfg *config.Config, rt *router, reg prometheus.Registerer) (*reloader, error) {
	r := &reloader{
		path: path, overrides: o, rt: rt, current: cfg,
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
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Registered before the listeners open: SIGHUP's default action would end the process.
	r.hup = make(chan os.Signal, 1)
	signal.Notify(r.hup, syscall.SIGHUP)
	r.generation.Set(1)
	r.reloads.WithLabelValues("ok")
	r.reloads.WithLabelValues("error")
	if data, err := os.ReadFile(path); err == nil {
		r.sum = sha256.Sum256(data)
	}
	return r, nil
}

// run reloads on SIGHUP, and when the file's content changes, whether it was written in place or
// replaced by a rename (as Kubernetes ConfigMap volumes do): it is read again by path each time.
func (r *reloader) run(ctx context.Context, poll time.Duration) {
	defer signal.Stop(r.hup)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.hup:
			r.reload("SIGHUP")
		case <-tick.C:
			data, err := os.ReadFile(r.path)
			if err != nil {
				continue // mid-swap, or gone: the next tick or a SIGHUP tells
			}
			if sum := sha256.Sum256(data); !bytes.Equal(sum[:], r.sum[:]) {
				r.reload("file changed")
			}
		}
	}
}

func (r *reloader) reload(why string) {
	log := r.rt.log.With("config", r.path, "trigger", why)
	data, _ := os.ReadFile(r.path)
	r.sum = sha256.Sum256(data)
	cfg, err := loadConfig(r.path)
	if err == nil {
		r.overrides.apply(cfg)
		var p = r.rt.runner.Load()
		next, buildErr := r.rt.buildRunnerProxy(cfg)
		if buildErr == nil {
			r.rt.runner.Store(next)
			p.CloseIdleConnections()
		}
		err = buildErr
	}
	if err != nil {
		r.reloads.WithLabelValues("error").Inc()
		log.Error("config reload refused; the running config stays", "error", err)
		return
	}
	if restartNeeded(r.current, cfg) {
		log.Warn("listeners, registry, internal, agents and gitlab_api changes take effect only after a restart")
	}
	r.current = cfg
	r.generation.Inc()
	r.reloads.WithLabelValues("ok").Inc()
	log.Info("config reloaded", "cells", len(cfg.Cells))
}

func restartNeeded(old, next *config.Config) bool {
	return old.Listen != next.Listen ||
		(old.Registry == nil) != (next.Registry == nil) ||
		!bytes.Equal(old.Internal.Secret, next.Internal.Secret) ||
		len(old.Agents.Keys) != len(next.Agents.Keys) ||
		(old.GitLabAPI == nil) != (next.GitLabAPI == nil)
}
