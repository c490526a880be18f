package main

import (
	"fmt"
	"net"

	"golang.org/x/net/netutil"

	"gitlab.com/edge/edge/config"
)

type listeners struct{ public, ops, internal, redirect, ssh net.Listener }

// openListeners opens every listener before anything starts, so a busy port fails at once; when
// one cannot be opened, those opened before it are closed again.
func openListeners(cfg *config.Config, withInternal bool) (listeners, error) {
	var l listeners
	redirect := ""
	if cfg.TLS != nil {
		redirect = cfg.TLS.RedirectHTTP
	}
	internal := ""
	if withInternal {
		internal = cfg.Listen.Internal
	}
	for _, want := range []struct {
		setting, addr string
		max           int
		ln            *net.Listener
	}{
		{"listen.public", cfg.Listen.Public, cfg.Limits.MaxConnections, &l.public},
		{"listen.ops", cfg.Listen.Ops, 0, &l.ops},
		{"listen.internal", internal, 0, &l.internal},
		{"listen.ssh", cfg.Listen.SSH, 0, &l.ssh},
		{"tls.redirect_http", redirect, 0, &l.redirect},
	} {
		if want.addr == "" {
			continue
		}
		ln, err := listen(want.addr, want.max)
		if err != nil {
			l.close()
			return listeners{}, fmt.Errorf("%s: %w", want.setting, err)
		}
		*want.ln = ln
	}
	return l, nil
}

// close closes every listener that is open.
func (l listeners) close() {
	for _, ln := range []net.Listener{l.public, l.ops, l.internal, l.ssh, l.redirect} {
		if ln != nil {
			ln.Close()
		}
	}
}

// listen opens a TCP listener; with max > 0 it holds at most max connections open at once,
// making further clients wait in the kernel's accept queue instead of exhausting descriptors.
func listen(addr string, max int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || max <= 0 {
		return ln, err
	}
	return netutil.LimitListener(ln, max), nil
}
