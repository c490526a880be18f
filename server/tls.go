package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/cli"
)

// publicTLS is the public listener's TLS: a static certificate (tls.static), which a reload
// swaps for new handshakes, or certificates from ACME; and the plain-HTTP listener
// (tls.redirect_http) that answers HTTP-01 challenges and redirects the rest to HTTPS.
type publicTLS struct {
	static   atomic.Pointer[tls.Certificate]
	acme     *acmeManager // nil without tls.acme
	on       bool
	redirect *listener
}

func newTLS(cfg *config.Config, d deps, ws *workspaces) (*publicTLS, error) {
	t := &publicTLS{on: cfg.TLS != nil}
	var err error
	if t.acme, err = newACME(cfg, ws, d.log, d.reg); err != nil {
		return nil, err
	}
	if err := d.reg.Register(t); err != nil {
		return nil, err
	}
	addr := ""
	if cfg.TLS != nil {
		addr = cfg.TLS.RedirectHTTP
	}
	t.redirect = httpListener("tls.redirect_http", addr, phaseTraffic, d.guard.Handler("redirect", redirectHandler(cfg.Listen.Public, t.acme)),
		&http.Server{ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout.Duration, IdleTimeout: cfg.Limits.IdleTimeout.Duration}, d.log)
	return t, nil
}

func (t *publicTLS) module() module {
	m := module{name: "tls",
		settings: []setting{
			{name: "tls", same: func(a, b *config.Config) bool {
				return (a.TLS == nil) == (b.TLS == nil) && (a.TLS == nil || (a.TLS.ACME == nil) == (b.TLS.ACME == nil))
			}},
			{name: "tls.acme", same: func(a, b *config.Config) bool {
				return a.TLS == nil || b.TLS == nil || a.TLS.ACME == nil || b.TLS.ACME == nil || reflect.DeepEqual(*a.TLS.ACME, *b.TLS.ACME)
			}},
			{name: "tls.redirect_http", same: func(a, b *config.Config) bool {
				return a.TLS == nil || b.TLS == nil || a.TLS.RedirectHTTP == b.TLS.RedirectHTTP
			}},
			{name: "tls.static", reload: true, same: func(a, b *config.Config) bool {
				x, y := staticOf(a), staticOf(b)
				return (x == nil) == (y == nil) && (x == nil || bytes.Equal(x.CertPEM, y.CertPEM) && bytes.Equal(x.KeyPEM, y.KeyPEM))
			}, files: func(c *config.Config) []string {
				if s := staticOf(c); s != nil {
					return []string{s.CertFile, s.KeyFile}
				}
				return nil
			}},
		},
		routes:    t.routes,
		listeners: []*listener{t.redirect},
		status:    t,
	}
	if t.acme != nil {
		m.stages = t.acme.stages()
	}
	return m
}

func staticOf(c *config.Config) *config.StaticTLS {
	if c.TLS == nil {
		return nil
	}
	return c.TLS.Static
}

// routes reads the static certificate of one config; new handshakes get it once in force.
func (t *publicTLS) routes(cfg *config.Config, next *table) error {
	s := staticOf(cfg)
	if s == nil {
		return nil
	}
	c, err := tls.X509KeyPair(s.CertPEM, s.KeyPEM)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("tls.static: %w", err)}
	}
	next.onApply(func() { t.static.Store(&c) })
	return nil
}

// config is the public listener's TLS config; nil: plain HTTP. Both serve HTTP/2 and HTTP/1.1
// (WebSockets and the agents' tunnel upgrade need HTTP/1.1; clients that offer both choose).
func (t *publicTLS) config() *tls.Config {
	switch {
	case t.acme != nil:
		return t.acme.tlsConfig()
	case t.on:
		return &tls.Config{
			MinVersion: tls.VersionTLS12,
			NextProtos: []string{"h2", "http/1.1"},
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return t.static.Load(), nil
			},
		}
	}
	return nil
}

// status shows the public listener's certificates, static or from ACME.
func (t *publicTLS) status(_ context.Context, s *Status) {
	s.Certificates = append(s.Certificates, t.certificates(time.Now())...)
}

func (t *publicTLS) certificates(now time.Time) []CertStatus {
	out := appendCert(nil, "tls.static", t.static.Load(), now)
	if m := t.acme; m != nil && m.cache != nil {
		for _, d := range m.domains {
			for _, c := range m.cache.AllMatchingCertificates(d) {
				out = appendCert(out, "tls.acme", &c.Certificate, now)
			}
		}
	}
	return out
}

// Describe and Collect export each certificate's end of validity, for the alert on one about to
// expire (a renewal failing for days, a static one forgotten).
func (t *publicTLS) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

// Collect gives one series per source and name: the latest certificate of the name (the cache
// may hold the one a renewal replaces for a while).
func (t *publicTLS) Collect(ch chan<- prometheus.Metric) {
	latest := map[[2]string]time.Time{}
	for _, c := range t.certificates(time.Now()) {
		k := [2]string{c.Source, c.Names[0]}
		if c.NotAfter.After(latest[k]) {
			latest[k] = c.NotAfter
		}
	}
	for k, notAfter := range latest {
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(notAfter.Unix()), k[0], k[1])
	}
}

var certExpiryDesc = prometheus.NewDesc("edge_tls_certificate_expiry_timestamp_seconds",
	"When each certificate of the public listener stops being valid (Unix time), by source (tls.static, tls.acme) and its first name.",
	[]string{"source", "name"}, nil)
