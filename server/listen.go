package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"gitlab.com/edge/edge/engine"
	"gitlab.com/edge/edge/internal/guard"
)

// openListeners opens every configured listener before anything starts, so a busy port fails at
// once; when one cannot be opened, those opened before it are closed again.
func openListeners(mods []module) error {
	var opened []*listener
	for _, m := range mods {
		for _, l := range m.listeners {
			if l.addr == "" {
				continue
			}
			ln, err := listen(l.addr, l.max)
			if err != nil {
				for _, o := range opened {
					o.ln.Close()
					o.ln = nil
				}
				return fmt.Errorf("%s: %w", l.setting, err)
			}
			l.ln = ln
			opened = append(opened, l)
		}
	}
	return nil
}

// listen opens a TCP listener; with max > 0 it holds at most max connections open at once,
// making further clients wait in the kernel's accept queue instead of exhausting descriptors.
func listen(addr string, max int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || max <= 0 {
		return ln, err
	}
	return newLimitListener(ln, max), nil
}

// serveStage serves the listeners of one phase; its stop shuts them down together, so that none
// takes new connections while another waits for its requests in flight, and the stage ends once
// every serve has returned. A listener whose serving
// panics has stopped serving: that is reported as its failure (edge drains and exits, as when a
// listener fails), not left as a port nobody answers.
func serveStage(p phase, lns []*listener, errc chan<- error, log *slog.Logger, g *guard.Guard) stage {
	name := "listeners"
	if p == phaseOps {
		name = "ops listener"
	}
	return stage{name: name, phase: p,
		start: func(_ context.Context, run *goroutines) error {
			for _, l := range lns {
				var cfg *tls.Config
				if l.tls != nil {
					cfg = l.tls()
				}
				ln := l.ln
				if cfg != nil {
					ln = tls.NewListener(ln, cfg)
				}
				log.Info("listening", "listener", shortName(l.setting), "addr", l.ln.Addr().String())
				run.wg.Go(func() {
					defer g.Recover("listener", func(bool) { errc <- fmt.Errorf("%s: serving crashed (a contained panic)", l.setting) })
					errc <- l.serve(ln, cfg)
				})
			}
			return nil
		},
		stop: func(ctx context.Context) {
			var wg sync.WaitGroup
			for _, l := range lns {
				wg.Go(g.Func("listener", func() { l.shutdown(ctx) }))
			}
			wg.Wait()
		}}
}

// httpListener serves h on the listener of setting: requests in flight get until the stop's
// context ends to finish, then what remains is closed.
func httpListener(setting, addr string, p phase, h http.Handler, srv *http.Server, log *slog.Logger) *listener {
	srv.Handler = h
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	return served(setting, addr, p, log, srv, func(t *tls.Config) { srv.TLSConfig = t })
}

// engineListener is httpListener through edge's own HTTP/1.1 engine, which hands what it does
// not read to srv.
func engineListener(setting, addr string, p phase, h http.Handler, srv *http.Server, log *slog.Logger, g *guard.Guard) *listener {
	srv.Handler = h
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	e := engine.New(engine.Options{Handler: h, Fallback: srv, Log: log, Guard: g})
	return served(setting, addr, p, log, e, func(t *tls.Config) {
		if t != nil {
			// Its own copy: net/http adjusts the config it serves with, while the listener
			// handshakes with the original.
			srv.TLSConfig = t.Clone()
		}
	})
}

// server is what serves a listener: net/http's, or the engine.
type server interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// served is the listener of setting served by srv, given the TLS config (nil: none) first.
func served(setting, addr string, p phase, log *slog.Logger, srv server, useTLS func(*tls.Config)) *listener {
	return &listener{setting: setting, addr: addr, phase: p,
		serve: func(ln net.Listener, t *tls.Config) error {
			useTLS(t)
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
		shutdown: func(ctx context.Context) {
			if err := srv.Shutdown(ctx); err != nil {
				log.Warn("grace period over; closing remaining connections", "listener", setting, "error", err)
				srv.Close()
			}
		}}
}

// shortName is how the log has always named a listener: "public" for listen.public,
// "redirect_http" for tls.redirect_http.
func shortName(setting string) string {
	_, name, _ := strings.Cut(setting, ".")
	return name
}
