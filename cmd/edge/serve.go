package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"gitlab.com/edge/edge/config"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve --config edge.yaml", stderr)
	path := fs.String("config", "edge.yaml", "config file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stderr)
	return serve(ctx, cfg, log)
}

// serve runs until ctx ends (SIGTERM/SIGINT), then drains: /readyz turns 503, the public
// listener stops accepting, and requests in flight, long polls included, get up to
// shutdown.grace to finish.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	reg := newRegistry()
	rt, err := buildRouter(cfg, log, reg)
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
		Handler:           opsHandler(reg, h),
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
	errc := make(chan error, 2)
	go func() { errc <- serveOn(public, publicLn) }()
	go func() { errc <- serveOn(ops, opsLn) }()
	log.Info("listening", "listener", "public", "addr", publicLn.Addr().String())
	log.Info("listening", "listener", "ops", "addr", opsLn.Addr().String())
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
	if shutdownErr := public.Shutdown(drainCtx); shutdownErr != nil {
		log.Warn("grace period over; closing remaining connections", "error", shutdownErr)
		public.Close()
	}
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
