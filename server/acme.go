package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/internal/redirect"
	"gitlab.com/edge/edge/workspaceauth"
)

// acmeManager gets and renews the public listener's certificates with certmagic: the configured
// domains at start, workspace hosts on demand at their first handshake (only hosts that parse as a
// workspace of the domain and that the authorizer does not know to be missing, within a rate
// limit). A name edge has no certificate for fails the handshake. Only this module imports
// certmagic. The factory reads the settings; certmagic's cache and its goroutines start with the
// acme stage.
type acmeManager struct {
	cfg       *certmagic.Config
	cache     *certmagic.Cache
	issuer    *certmagic.ACMEIssuer
	template  certmagic.ACMEIssuer
	storage   string
	domains   []string
	wsDomain  string
	directory workspaceauth.Directory
	limit     *tokenBucket
	decisions *prometheus.CounterVec
	issuance  *prometheus.CounterVec
	log       *slog.Logger
}

// On-demand certificates: at most onDemandBurst at once, then one per onDemandEvery.
const (
	onDemandBurst = 10
	onDemandEvery = 6 * time.Second
)

func newACME(c *config.Config, ws *workspaces, log *slog.Logger, reg prometheus.Registerer) (*acmeManager, error) {
	if c.TLS == nil || c.TLS.ACME == nil {
		return nil, nil
	}
	a := c.TLS.ACME
	m := &acmeManager{
		domains: a.Domains, log: log.With("component", "acme"),
		limit: &tokenBucket{burst: onDemandBurst, every: onDemandEvery, tokens: onDemandBurst, last: time.Now()},
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_tls_on_demand_total",
			Help: "Decisions on getting a certificate for a name at its first handshake, by result.",
		}, []string{"result"}),
	}
	m.issuance = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edge_tls_acme_total",
		Help: "Certificates asked of the ACME CA, by result (obtained, failed) and whether it was a renewal.",
	}, []string{"result", "renewal"})
	for _, c := range []prometheus.Collector{m.decisions, m.issuance} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{"obtained", "failed"} {
		m.issuance.WithLabelValues(r, "false")
		m.issuance.WithLabelValues(r, "true")
	}
	for _, r := range []string{"managed", "allowed", "not_a_workspace", "unknown_workspace", "rate_limited"} {
		m.decisions.WithLabelValues(r)
	}
	if c.Workspaces != nil && a.OnDemandWorkspaces {
		m.wsDomain = c.Workspaces.Domain
		m.directory = ws.directory
	}
	storage := a.Storage
	if storage == "" {
		data := os.Getenv("XDG_DATA_HOME")
		if data == "" {
			home, _ := os.UserHomeDir()
			data = filepath.Join(home, ".local", "share")
		}
		storage = filepath.Join(data, "edge", "certs")
	}
	m.storage = storage
	template := certmagic.ACMEIssuer{CA: a.CA, Email: a.Email, Agreed: true, Logger: zap.NewNop(),
		DisableHTTPChallenge: c.TLS.RedirectHTTP == ""}
	if len(a.CARootPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(a.CARootPEM) {
			return nil, cli.UsageError{Err: errors.New("tls.acme.ca_root: no certificate")}
		}
		template.TrustedRoots = pool
	}
	// The challenges are answered on edge's own listeners: certmagic finds those ports in use and
	// leaves the answering to the TLS config and the HTTP handler below.
	host, port, _ := net.SplitHostPort(c.Listen.Public)
	template.ListenHost = host
	template.AltTLSALPNPort, _ = strconv.Atoi(port)
	if c.TLS.RedirectHTTP != "" {
		_, hp, _ := net.SplitHostPort(c.TLS.RedirectHTTP)
		template.AltHTTPPort, _ = strconv.Atoi(hp)
	}
	m.template = template
	return m, nil
}

// stages: certmagic's cache before the listeners, whose TLS config it makes; the configured
// domains' certificates once the listeners answer the challenges.
func (m *acmeManager) stages() []stage {
	return []stage{
		{name: "acme", phase: phaseParts, start: m.provision, stop: func(context.Context) { m.cache.Stop() }},
		{name: "acme domains", phase: phaseTraffic, start: m.manage},
	}
}

func (m *acmeManager) provision(context.Context, *goroutines) error {
	m.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: func(certmagic.Certificate) (*certmagic.Config, error) { return m.cfg, nil },
		Logger:           zap.NewNop(),
	})
	m.cfg = certmagic.New(m.cache, certmagic.Config{
		Storage:  &certmagic.FileStorage{Path: m.storage},
		OnDemand: &certmagic.OnDemandConfig{DecisionFunc: m.decide},
		Logger:   zap.NewNop(),
		OnEvent:  m.event,
	})
	m.issuer = certmagic.NewACMEIssuer(m.cfg, m.template)
	m.cfg.Issuers = []certmagic.Issuer{m.issuer}
	return nil
}

// event counts certmagic's results and logs a failure (certmagic's own log is off); it never
// returns an error, which would stop what the event announces.
func (m *acmeManager) event(_ context.Context, event string, data map[string]any) error {
	result := map[string]string{"cert_obtained": "obtained", "cert_failed": "failed"}[event]
	if result == "" {
		return nil
	}
	renewal := fmt.Sprint(data["renewal"] == true)
	m.issuance.WithLabelValues(result, renewal).Inc()
	if result == "failed" {
		m.log.Warn("ACME: no certificate", "name", data["identifier"], "renewal", renewal, "error", data["error"])
	}
	return nil
}

// manage hands the configured domains to certmagic until the stage's lifetime ends. With
// on-demand on (always, here) certmagic gets or loads each at its first handshake, not now.
func (m *acmeManager) manage(life context.Context, _ *goroutines) error {
	if len(m.domains) == 0 {
		return nil
	}
	return m.cfg.ManageAsync(life, m.domains)
}

// decide allows a certificate at first handshake for the configured domains and for workspace
// hosts: a name that does not parse as one is refused at once; then the rate limit; then, when
// the authorizer can tell (the static file), the workspace must exist.
func (m *acmeManager) decide(_ context.Context, name string) error {
	result, err := m.decision(name)
	m.decisions.WithLabelValues(result).Inc()
	if err != nil {
		m.log.Info("no certificate for this name", "name", name, "result", result)
	}
	return err
}

func (m *acmeManager) decision(name string) (string, error) {
	if slices.Contains(m.domains, strings.ToLower(name)) {
		return "managed", nil
	}
	if m.wsDomain == "" {
		return "not_a_workspace", ErrOnDemandOff
	}
	h, ok := workspaceauth.ParseHost(name, m.wsDomain)
	if !ok {
		return "not_a_workspace", fmt.Errorf("%s is not a workspace host of %s", name, m.wsDomain)
	}
	if !m.limit.take() {
		return "rate_limited", ErrTooManyNames
	}
	if m.directory != nil {
		if _, ok := m.directory.Lookup(h.Workspace); !ok {
			return "unknown_workspace", fmt.Errorf("workspace %s does not exist", h.Workspace)
		}
	}
	return "allowed", nil
}

// tlsConfig answers handshakes with certmagic's certificates (and its TLS-ALPN challenges), HTTP/2
// and HTTP/1.1.
func (m *acmeManager) tlsConfig() *tls.Config {
	t := m.cfg.TLSConfig()
	t.MinVersion = tls.VersionTLS12
	t.NextProtos = append([]string{"h2", "http/1.1"}, t.NextProtos...)
	return t
}

// redirectHandler serves the plain-HTTP listener: ACME HTTP-01 challenges, and a permanent
// redirect to the same URL over HTTPS on the public port for everything else.
func redirectHandler(publicAddr string, acme *acmeManager) http.Handler {
	_, port, _ := net.SplitHostPort(publicAddr)
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if host == "" {
			hop.Write(w, http.StatusBadRequest, "bad_request", "a Host header is required")
			return
		}
		if port != "443" {
			host = net.JoinHostPort(host, port)
		}
		loc, ok := redirect.Absolute("https", host, r.URL.RequestURI())
		if !ok {
			hop.Write(w, http.StatusBadRequest, "bad_request", "the Host header is not a host name")
			return
		}
		redirect.Write(w, http.StatusPermanentRedirect, loc)
	})
	if acme == nil {
		return redirect
	}
	// The issuer exists once the acme stage has started, before this listener serves.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !acme.issuer.HandleHTTPChallenge(w, r) {
			redirect.ServeHTTP(w, r)
		}
	})
}

// tokenBucket allows burst at once, then one per every.
type tokenBucket struct {
	mu     sync.Mutex
	burst  float64
	every  time.Duration
	tokens float64
	last   time.Time
}

func (b *tokenBucket) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()/b.every.Seconds())
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
