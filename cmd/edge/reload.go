package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
)

// reloader applies a changed config file: the whole route table (cells, job token keys,
// classify, routing limits, trusted proxies, agent keys, the API for GitLab) takes effect for new
// requests and agent connections without dropping any connection. A bad file is refused with an
// error log line and the running config stays. A changed setting that needs a restart (listeners,
// limits, the registry, ...) is named in the log.
type reloader struct {
	path       string
	overrides  overrides
	rt         *router
	mu         sync.Mutex // guards current: the drain reads its grace
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
	r.sum, _ = watchedSum(path, cfg)
	return r, nil
}

// watchedSum is a digest of the files whose change starts a reload: the config file, and the
// tls.static and internal.tls certificate and key (a rotated Secret reaches the pod as new files,
// with no config change).
func watchedSum(path string, cfg *config.Config) ([32]byte, error) {
	h := sha256.New()
	files := []string{path}
	if cfg != nil && cfg.TLS != nil && cfg.TLS.Static != nil {
		files = append(files, cfg.TLS.Static.CertFile, cfg.TLS.Static.KeyFile)
	}
	if cfg != nil && cfg.Internal.TLS != nil {
		files = append(files, cfg.Internal.TLS.CertFile, cfg.Internal.TLS.KeyFile)
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
			r.mu.Lock()
			current := r.current
			r.mu.Unlock()
			sum, err := watchedSum(r.path, current)
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
	log := r.rt.log.With("config", r.path, "trigger", why)
	cfg, err := loadConfig(r.path)
	// The digest of what was read, whatever came of it: a bad file is not retried until it changes.
	r.sum, _ = watchedSum(r.path, cmp.Or(cfg, r.current))
	var next routeTable
	if err == nil {
		r.overrides.apply(cfg)
		next, err = r.rt.buildRoutes(cfg)
	}
	if err == nil {
		err = r.rt.apply(next)
	}
	if err != nil {
		r.reloads.WithLabelValues("error").Inc()
		log.Error("config reload refused; the running config stays", "error", err)
		return
	}
	endChangedWatches(r.current, cfg, r.rt.aggregation, log)
	changed := config.Diff(r.current, cfg)
	for _, name := range restartOnly(r.current, cfg, changed) {
		log.Warn("setting changed but needs a restart; the running value stays", "setting", name)
	}
	r.mu.Lock()
	r.current = cfg
	r.mu.Unlock()
	r.generation.Inc()
	r.reloads.WithLabelValues("ok").Inc()
	log.Info("config reloaded", "cells", len(cfg.Cells), "changed", changed)
}

// grace is shutdown.grace of the config in force.
func (r *reloader) grace() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current.Shutdown.Grace.Duration
}

// reloadable are the settings a reload applies: the whole route table (cells, routing, token
// keys, agent keys and agents.max_connections, the API for GitLab, the access log switch) and the
// drain's grace.
var reloadable = map[string]bool{
	"cells": true, "routing": true, "tokens": true, "gitlab_api": true, "log.access": true,
	"shutdown.grace": true, "agents": true,
}

// restartOnly names each changed setting a reload cannot apply: listeners, limits, log level and
// format, the registry, the internal secret and peers, agents.wait (the agent router outlives
// reloads), turning workspaces on or off, which authorizer serves them (the static one re-reads
// its own file), and workspaces.logins (the login store outlives reloads).
func restartOnly(old, next *config.Config, changed []string) []string {
	var out []string
	for _, name := range changed {
		if !reloadable[name] {
			out = append(out, name)
		}
	}
	if !sameInternalTLS(old.Internal, next.Internal) {
		out = append(out, "internal.tls")
	}
	if !bytes.Equal(old.Internal.CA, next.Internal.CA) {
		out = append(out, "internal.ca_file")
	}
	if old.Listen.SSH != next.Listen.SSH {
		out = append(out, "listen.ssh")
	}
	if ow, nw := old.Workspaces, next.Workspaces; ow != nil && nw != nil && !reflect.DeepEqual(ow.SSH, nw.SSH) {
		out = append(out, "workspaces.ssh")
	}
	if old.Agents.Wait != next.Agents.Wait {
		out = append(out, "agents.wait")
	}
	switch {
	case (old.TLS == nil) != (next.TLS == nil), old.TLS != nil && (old.TLS.ACME == nil) != (next.TLS.ACME == nil):
		out = append(out, "tls")
	case old.TLS != nil && old.TLS.ACME != nil && !reflect.DeepEqual(*old.TLS.ACME, *next.TLS.ACME):
		out = append(out, "tls.acme")
	case old.TLS != nil && old.TLS.RedirectHTTP != next.TLS.RedirectHTTP:
		out = append(out, "tls.redirect_http")
	}
	if (old.Aggregation == nil) != (next.Aggregation == nil) {
		out = append(out, "aggregation")
	}
	ow, nw := old.Workspaces, next.Workspaces
	switch {
	case (ow == nil) != (nw == nil):
		out = append(out, "workspaces")
	case ow != nil && (ow.Authorizer.File != nw.Authorizer.File || ow.Authorizer.URL != nw.Authorizer.URL ||
		!bytes.Equal(ow.Authorizer.Secret, nw.Authorizer.Secret) || ow.Authorizer.Timeout != nw.Authorizer.Timeout ||
		ow.Session.Recheck != nw.Session.Recheck):
		out = append(out, "workspaces.authorizer")
	}
	if ow != nil && nw != nil && ow.Logins != nw.Logins {
		out = append(out, "workspaces.logins")
	}
	return out
}

func sameInternalTLS(a, b config.Internal) bool {
	if (a.TLS == nil) != (b.TLS == nil) {
		return false
	}
	return a.TLS == nil || bytes.Equal(a.TLS.CertPEM, b.TLS.CertPEM) && bytes.Equal(a.TLS.KeyPEM, b.TLS.KeyPEM)
}
