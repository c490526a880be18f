package main

import (
	"context"
	"crypto/tls"
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
	return serve(ctx, cfg, *path, o, log, stderr)
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

// serve runs until ctx ends (SIGTERM/SIGINT), then drains: /readyz turns 503, registry entries
// go, the public listener stops accepting, and requests in flight, long polls included, get up to
// shutdown.grace to finish. Its parts start as stages and stop in reverse.
func serve(ctx context.Context, cfg *config.Config, path string, o overrides, log *slog.Logger, logOut io.Writer) error {
	reg := newRegistry()
	rt, err := buildRouter(cfg, log, reg)
	if err != nil {
		return err
	}
	reloads, err := newReloader(path, o, cfg, rt, reg)
	if err != nil {
		return err
	}
	logStartup(log, cfg, path)
	// Access lines are batched (flushed every 100 ms and at exit): a write per request cost more
	// than the line itself. The stage below flushes them last.
	logCtx, stopLog := context.WithCancel(context.Background())
	accessOut := newLineBuffer(logCtx, logOut, 100*time.Millisecond)
	defer func() { stopLog(); accessOut.Flush() }()
	rt.front.UseAccessLog(newLogger(cfg.Log, accessOut))
	h := &health{}
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	public := &http.Server{
		Handler:           rt.front,
		ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
		IdleTimeout:       cfg.Limits.IdleTimeout.Duration,
		MaxHeaderBytes:    int(cfg.Limits.MaxHeaderBytes),
		ErrorLog:          errorLog,
	}
	ops := &http.Server{
		Handler:           opsHandler(reg, h, rt.agents.registry.Healthy),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          errorLog,
	}
	var internal *http.Server
	if rt.agents.internal != nil {
		internal = &http.Server{
			Handler:           rt.front.InternalHandler(),
			ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
			IdleTimeout:       cfg.Limits.IdleTimeout.Duration,
			MaxHeaderBytes:    int(cfg.Limits.MaxHeaderBytes),
			ErrorLog:          errorLog,
		}
	}
	acme, err := buildACME(cfg, rt.workspaces, log, reg)
	if err != nil {
		return err
	}
	sshd, err := buildSSH(cfg, rt, log, reg)
	if err != nil {
		return err
	}
	acmeCtx, stopACME := context.WithCancel(context.Background())
	defer stopACME()
	var redirect *http.Server
	if cfg.TLS != nil && cfg.TLS.RedirectHTTP != "" {
		redirect = &http.Server{Handler: redirectHandler(cfg.Listen.Public, acme), ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
			IdleTimeout: cfg.Limits.IdleTimeout.Duration, ErrorLog: errorLog}
	}
	lns, err := openListeners(cfg, internal != nil)
	if err != nil {
		return err
	}
	errc := make(chan error, 8)
	serveIn := func(name string, srv *http.Server, ln net.Listener) {
		log.Info("listening", "listener", name, "addr", ln.Addr().String())
		go func() { errc <- serveOn(srv, ln) }()
	}
	authzCtx, stopAuthz := context.WithCancel(context.Background())
	defer stopAuthz()
	reloadCtx, stopReload := context.WithCancel(context.Background())
	defer stopReload()
	reloadDone := make(chan struct{})
	st := &stages{log: log}
	err = st.start(ctx,
		stage{name: "ops listener",
			start: func() error { serveIn("ops", ops, lns.ops); return nil },
			stop:  func(context.Context) { ops.Close() }},
		stage{name: "registry",
			start: func() error { rt.agents.run(); return nil },
			stop:  func(context.Context) { rt.agents.stopRegistry() }},
		stage{name: "tunnels",
			stop: func(ctx context.Context) { rt.agents.drainTunnels(ctx) }},
		stage{name: "workspace authorizer",
			start: func() error { go rt.workspaces.run(authzCtx); return nil },
			stop:  func(context.Context) { stopAuthz() }},
		stage{name: "public and internal listeners",
			start: func() error {
				switch {
				case acme != nil:
					public.TLSConfig = acme.tlsConfig()
				case cfg.TLS != nil:
					public.TLSConfig = rt.certs.tlsConfig()
				}
				if public.TLSConfig != nil {
					lns.public = tls.NewListener(lns.public, public.TLSConfig)
				}
				serveIn("public", public, lns.public)
				if internal != nil {
					if t := cfg.Internal.TLS; t != nil {
						cert, err := tls.X509KeyPair(t.CertPEM, t.KeyPEM)
						if err != nil {
							return fmt.Errorf("internal.tls: %w", err)
						}
						internal.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
							NextProtos: []string{"h2", "http/1.1"}}
						lns.internal = tls.NewListener(lns.internal, internal.TLSConfig)
					}
					serveIn("internal", internal, lns.internal)
				}
				if redirect != nil {
					serveIn("redirect_http", redirect, lns.redirect)
				}
				if acme != nil {
					return acme.start(acmeCtx)
				}
				return nil
			},
			stop: func(ctx context.Context) { stopACME(); shutdown(ctx, log, public, internal, redirect) }},
		stage{name: "ssh listener",
			start: func() error {
				if sshd != nil {
					log.Info("listening", "listener", "ssh", "addr", lns.ssh.Addr().String())
					go func() { errc <- sshd.Serve(lns.ssh) }()
				}
				return nil
			},
			stop: func(ctx context.Context) {
				if sshd != nil {
					lns.ssh.Close()
					sshd.Shutdown(ctx)
				}
			}},
		stage{name: "ready",
			start: func() error { h.ready.Store(true); return nil },
			stop: func(ctx context.Context) {
				h.draining.Store(true)
				log.Info("draining", "grace", cfg.Shutdown.Grace.String())
				rt.agents.drainRegistry(ctx)
			}},
		stage{name: "reload",
			start: func() error {
				go func() { defer close(reloadDone); reloads.run(reloadCtx, 2*time.Second) }()
				return nil
			},
			stop: func(context.Context) { stopReload(); <-reloadDone }},
	)
	if err != nil {
		return err
	}
	select {
	case err = <-errc:
		log.Error("listener failed", "error", err)
	case <-ctx.Done():
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), reloads.grace())
	defer cancel()
	st.stop(drainCtx)
	log.Info("stopped")
	return err
}

// shutdown lets the servers' requests finish within ctx, then closes what remains.
func shutdown(ctx context.Context, log *slog.Logger, servers ...*http.Server) {
	var wg sync.WaitGroup
	for _, srv := range servers {
		if srv == nil {
			continue
		}
		wg.Go(func() {
			if err := srv.Shutdown(ctx); err != nil {
				log.Warn("grace period over; closing remaining connections", "error", err)
				srv.Close()
			}
		})
	}
	wg.Wait()
}

func serveOn(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
