package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/proxy"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/tunnel"
)

// loadConfig reads and validates a config; problems are usage errors (exit 2).
func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			return nil, usageError{fmt.Errorf("%d problem(s) in %s:\n%w", len(problems), path, problems)}
		}
		return nil, usageError{err}
	}
	return cfg, nil
}

// router is everything the listeners serve. The runner proxy is swapped whole on a config
// reload; requests in flight finish on the one they started with.
type router struct {
	runner  atomic.Pointer[proxy.Proxy]
	agents  *agentParts
	metrics *proxy.Metrics         // shared by every runner proxy: registered once
	learned *discovery.LearnedJobs // outlives reloads: what was learned stays learned
	log     *slog.Logger
}

func buildRouter(cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) (*router, error) {
	rt := &router{
		learned: discovery.NewLearnedJobs(cfg.Routing.LearnedJobs.Size, cfg.Routing.LearnedJobs.TTL.Duration),
		log:     log,
	}
	var err error
	if rt.metrics, err = proxy.NewMetrics(reg); err != nil {
		return nil, err
	}
	p, err := rt.buildRunnerProxy(cfg)
	if err != nil {
		return nil, err
	}
	rt.runner.Store(p)
	if rt.agents, err = buildAgents(cfg, log, reg); err != nil {
		return nil, err
	}
	return rt, nil
}

// buildRunnerProxy builds the runner proxy of one config: cells, token keys, classify, limits.
func (rt *router) buildRunnerProxy(cfg *config.Config) (*proxy.Proxy, error) {
	cells, err := buildCells(cfg.Cells)
	if err != nil {
		return nil, usageError{err}
	}
	opts := proxy.Options{
		Cells:           cells,
		RejectInvalid:   cfg.Tokens.JobJWT.OnInvalid == config.OnInvalidReject,
		BodyTokenLimit:  int64(cfg.Routing.BodyTokenLimit),
		BodyReadTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
		LongPollTimeout: cfg.Routing.LongPollTimeout.Duration,
		UpstreamTimeout: cfg.Routing.UpstreamTimeout.Duration,
		DialTimeout:     cfg.Routing.DialTimeout.Duration,
		TrustedProxies:  cfg.Routing.TrustedPrefixes,
		Learned:         rt.learned,
		Log:             rt.log,
		Metrics:         rt.metrics,
	}
	if cfg.Tokens.JobJWT.Verify {
		v, err := buildVerifier(cfg.Tokens)
		if err != nil {
			return nil, usageError{err}
		}
		opts.Verifier = v
	} else {
		opts.RouteUnverified = true
	}
	if cfg.Routing.ClassifyURL != "" {
		c, err := discovery.NewClassifier(discovery.ClassifierOptions{
			URL:     cfg.Routing.ClassifyURL,
			Timeout: cfg.Routing.ClassifyTimeout.Duration,
			Log:     rt.log,
		})
		if err != nil {
			return nil, usageError{fmt.Errorf("routing.classify_url: %w", err)}
		}
		opts.Classifier = c
	}
	return proxy.New(opts)
}

// Handler dispatches the public listener by path prefix. It is not a ServeMux on purpose: a
// mux cleans and redirects paths, and runner requests must reach the cell as they were sent.
func (rt *router) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		switch {
		case path == tunnel.ConnectPath:
			if rt.agents.tunnels == nil {
				writeJSONError(w, http.StatusNotFound, "agents_disabled", "this edge accepts no agents: agents.keys is not configured")
				return
			}
			rt.agents.tunnels.ServeHTTP(w, r)
		case strings.HasPrefix(path, "/-/api/v1/"):
			if rt.agents.gitlabAPI == nil {
				writeJSONError(w, http.StatusNotFound, "api_disabled", "the API for GitLab is not configured (gitlab_api)")
				return
			}
			stripEdgeHeaders(r.Header)
			rt.agents.gitlabAPI.ServeHTTP(w, r)
		default:
			rt.runner.Load().ServeHTTP(w, r)
		}
	})
}

func stripEdgeHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, "Edge-") {
			delete(h, k)
		}
	}
}

func writeJSONError(w http.ResponseWriter, status int, cause, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": cause, "message": message})
}

func buildCells(in []config.Cell) (*discovery.Cells, error) {
	out := make([]discovery.Cell, 0, len(in))
	for i, c := range in {
		u, err := url.Parse(c.URL)
		if err != nil {
			return nil, fmt.Errorf("cells[%d].url: %w", i, err)
		}
		cell := discovery.Cell{ID: c.ID, URL: u, Legacy: c.Legacy}
		for _, r := range c.Ranges {
			cell.Ranges = append(cell.Ranges, discovery.IDRange{Lo: r.Lo, Hi: r.Hi})
		}
		out = append(out, cell)
	}
	return discovery.NewCells(out)
}

func buildVerifier(t config.Tokens) (*tokens.Verifier, error) {
	var keys []tokens.Key
	for i, k := range t.JobJWT.Keys {
		key, err := tokens.ParsePublicKeyPEM(k.KID, k.Alg, k.PEM)
		if err != nil {
			return nil, fmt.Errorf("tokens.job_jwt.keys[%d]: %w", i, err)
		}
		keys = append(keys, key)
	}
	if len(t.JobJWT.JWKS) > 0 {
		jwks, err := tokens.ParseJWKS(t.JobJWT.JWKS)
		if err != nil {
			return nil, fmt.Errorf("tokens.job_jwt.jwks_file: %w", err)
		}
		keys = append(keys, jwks...)
	}
	return tokens.NewVerifier(tokens.VerifierOptions{
		Keys:      keys,
		Issuer:    t.JobJWT.Issuer,
		Audience:  t.JobJWT.Audience,
		CacheSize: t.CacheSize,
	})
}
