package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"gitlab.com/edge/edge/config"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve --config edge.yaml [--advertise-internal URL]", stderr)
	path := fs.String("config", "edge.yaml", "config file")
	advertise := fs.String("advertise-internal", "", "overrides listen.advertise_internal, e.g. http://$(POD_IP):8081 in a Kubernetes pod spec")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o := overrides{advertiseInternal: *advertise}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	o.apply(cfg)
	log := newLogger(cfg.Log, stderr)
	return serve(ctx, cfg, *path, o, log)
}

// overrides are what flags set over the config file, applied again on every reload.
type overrides struct {
	advertiseInternal string
}

func (o overrides) apply(cfg *config.Config) {
	if o.advertiseInternal != "" {
		cfg.Listen.AdvertiseInternal = o.advertiseInternal
	}
}

// serve runs until ctx ends (SIGTERM/SIGINT), then drains: /readyz turns 503, the public
// listener stops accepting, and requests in flight, long polls included, get up to
// shutdown.grace to finish.
func serve(ctx context.Context, cfg *config.Config, path string, o overrides, log *slog.Logger) error {
	reg := newRegistry()
	rt, err := buildRouter(cfg, log, reg)
	if err != nil {
		return err
	}
	reloads, err := newReloader(path, o, cfg, rt, reg)
	if err != nil {
		return err
	}
	h := &health{}
	public := &http.Server{
		Handler:           rt.Handler(),
		ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
		IdleTimeout:       cfg.Limits.IdleTimeout.Duration,
		MaxHeaderBytes:    int(cfg.Limits.MaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ops := &http.Server{
		Handler:           opsHandler(reg, h, rt.agents.registry.Healthy),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	publicLn, err := listen(cfg.Listen.Public, cfg.Limits.MaxConnections)
	if err != nil {
		return fmt.Errorf("listen.public: %w", err)
	}
	opsLn, err := listen(cfg.Listen.Ops, 0)
	if err != nil {
		publicLn.Close()
		return fmt.Errorf("listen.ops: %w", err)
	}
	var internal *http.Server
	var internalLn net.Listener
	if rt.agents.internal != nil {
		if internalLn, err = listen(cfg.Listen.Internal, 0); err != nil {
			publicLn.Close()
			opsLn.Close()
			return fmt.Errorf("listen.internal: %w", err)
		}
		internal = &http.Server{
			Handler:           rt.agents.internal,
			ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
			IdleTimeout:       cfg.Limits.IdleTimeout.Duration,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	rt.agents.run(runCtx)
	go reloads.run(runCtx, 2*time.Second)
	errc := make(chan error, 3)
	go func() { errc <- serveOn(public, publicLn) }()
	go func() { errc <- serveOn(ops, opsLn) }()
	log.Info("listening", "listener", "public", "addr", publicLn.Addr().String())
	log.Info("listening", "listener", "ops", "addr", opsLn.Addr().String())
	if internal != nil {
		go func() { errc <- serveOn(internal, internalLn) }()
		log.Info("listening", "listener", "internal", "addr", internalLn.Addr().String())
	}
	h.ready.Store(true)

	select {
	case err = <-errc:
		log.Error("listener failed", "error", err)
	case <-ctx.Done():
	}
	h.draining.Store(true)
	grace := cfg.Shutdown.Grace.Duration
	log.Info("draining", "grace", grace)
	drainCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	rt.agents.drainRegistry(drainCtx)
	var wg sync.WaitGroup
	for _, srv := range []*http.Server{public, internal} {
		if srv == nil {
			continue
		}
		wg.Go(func() {
			if shutdownErr := srv.Shutdown(drainCtx); shutdownErr != nil {
				log.Warn("grace period over; closing remaining connections", "error", shutdownErr)
				srv.Close()
			}
		})
	}
	wg.Wait()
	rt.agents.drainTunnels(drainCtx)
	stopRun()
	rt.agents.close()
	ops.Close()
	log.Info("stopped")
	return err
}

func serveOn(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
