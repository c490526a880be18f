package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/proxy"
	"gitlab.com/edge/edge/tokens"
)

// loadConfig reads and validates a config; problems are usage errors (exit 2).
func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			return nil, usageError{Err: fmt.Errorf("%d problem(s) in %s:\n%w", len(problems), path, problems)}
		}
		return nil, usageError{Err: err}
	}
	return cfg, nil
}

// router is everything the listeners serve: the front with its route table, and the parts that
// outlive a reload (metrics, learned job ids, tunnels, the registry).
type router struct {
	front       *proxy.Front
	agents      *agentParts
	workspaces  *workspaceParts   // nil without a workspaces section
	aggregation *aggregationParts // nil without an aggregation section
	certs       certificates
	metrics     *proxy.Metrics         // shared by every runner proxy: registered once
	learned     *discovery.LearnedJobs // outlives reloads: what was learned stays learned
	log         *slog.Logger
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
	if rt.agents, err = buildAgents(cfg, log, reg); err != nil {
		return nil, err
	}
	if rt.workspaces, err = buildWorkspaceParts(cfg, rt.agents, log, reg); err != nil {
		return nil, err
	}
	if rt.aggregation, err = buildAggregationParts(cfg, reg); err != nil {
		return nil, err
	}
	rt.front = proxy.NewFront(log, rt.metrics)
	next, err := rt.buildRoutes(cfg)
	if err != nil {
		return nil, err
	}
	if err := rt.apply(next); err != nil {
		return nil, err
	}
	return rt, nil
}

// routeTable is one config's route table and the agent verifier that goes with it.
type routeTable struct {
	cert   *tls.Certificate // tls.static; nil: plain HTTP
	routes *proxy.Routes
	agents *tokens.AgentVerifier // nil: agents.keys not set
	// maxAgentConns is agents.max_connections: a reload applies it to new agent connects.
	maxAgentConns int
}

// buildRoutes builds everything a reload can change; nothing is in force until apply.
func (rt *router) buildRoutes(cfg *config.Config) (routeTable, error) {
	runner, err := rt.buildRunnerProxy(cfg)
	if err != nil {
		return routeTable{}, err
	}
	cert, err := parseStatic(cfg)
	if err != nil {
		return routeTable{}, err
	}
	t := routeTable{cert: cert, maxAgentConns: cfg.Agents.MaxConnections, routes: &proxy.Routes{
		Runner:    runner,
		Internal:  rt.agents.internal,
		Headers:   proxy.HeaderPolicy{Trusted: cfg.Routing.TrustedPrefixes},
		AccessLog: cfg.Log.AccessLog(),
	}}
	if len(cfg.Agents.Keys) > 0 {
		if t.agents, err = agentVerifier(cfg.Agents); err != nil {
			return routeTable{}, usageError{Err: err}
		}
		t.routes.AgentConnect = rt.agents.tunnels
	}
	if t.routes.Workspaces, t.routes.Auth, err = rt.workspaceRoutes(cfg); err != nil {
		return routeTable{}, err
	}
	if t.routes.Aggregation, err = rt.aggregationRoute(cfg); err != nil {
		return routeTable{}, err
	}
	if g := cfg.GitLabAPI; g != nil {
		v, err := tokens.NewGitLabAPIVerifier(g.Secret, g.Issuer, g.Audience, 0)
		if err != nil {
			return routeTable{}, usageError{Err: fmt.Errorf("gitlab_api: %w", err)}
		}
		t.routes.GitLabAPI = proxy.NewGitLabAPI(rt.agents.router, v)
	}
	return t, nil
}

// apply puts a route table in force: new requests and new agent connections see it, those in
// flight finish on the one they started with.
func (rt *router) apply(t routeTable) error {
	old := rt.front.Routes()
	rt.agents.verifier.Store(t.agents)
	rt.agents.tunnels.SetMaxConnectionsPerAgent(t.maxAgentConns)
	if t.cert != nil {
		rt.certs.cert.Store(t.cert)
	}
	if err := rt.front.Swap(t.routes); err != nil {
		return err
	}
	if old != nil {
		old.Runner.CloseIdleConnections()
	}
	return nil
}

// buildRunnerProxy builds the runner proxy of one config: cells, token keys, classify, limits.
func (rt *router) buildRunnerProxy(cfg *config.Config) (*proxy.Proxy, error) {
	cells, err := buildCells(cfg.Cells)
	if err != nil {
		return nil, usageError{Err: err}
	}
	opts := proxy.Options{
		Cells:           cells,
		RejectInvalid:   cfg.Tokens.JobJWT.OnInvalid == config.OnInvalidReject,
		BodyTokenLimit:  int64(cfg.Routing.BodyTokenLimit),
		BodyReadTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
		LongPollTimeout: cfg.Routing.LongPollTimeout.Duration,
		UpstreamTimeout: cfg.Routing.UpstreamTimeout.Duration,
		DialTimeout:     cfg.Routing.DialTimeout.Duration,
		Learned:         rt.learned,
		Log:             rt.log,
		Metrics:         rt.metrics,
	}
	switch j := cfg.Tokens.JobJWT; {
	case !j.Enabled:
		// No tokens.job_jwt section: the job-JWT rule is off (the startup line says so).
	case j.Verify:
		v, err := buildVerifier(cfg.Tokens)
		if err != nil {
			return nil, usageError{Err: err}
		}
		opts.Verifier = v
	default:
		opts.RouteUnverified = true
	}
	if cfg.Routing.ClassifyURL != "" {
		c, err := discovery.NewClassifier(discovery.ClassifierOptions{
			URL:     cfg.Routing.ClassifyURL,
			Timeout: cfg.Routing.ClassifyTimeout.Duration,
			Log:     rt.log,
		})
		if err != nil {
			return nil, usageError{Err: fmt.Errorf("routing.classify_url: %w", err)}
		}
		opts.Classifier = c
	}
	return proxy.New(opts)
}

func buildCells(in []config.Cell) (*discovery.Cells, error) {
	out := make([]discovery.Cell, 0, len(in))
	for i, c := range in {
		u, err := url.Parse(c.URL)
		if err != nil {
			return nil, fmt.Errorf("cells[%d].url: %w", i, err)
		}
		cell := discovery.Cell{ID: c.ID, URL: u, Legacy: c.Legacy, PreserveHost: c.KeepsHost()}
		for _, r := range c.Ranges {
			cell.Ranges = append(cell.Ranges, discovery.IDRange{Lo: r.Lo, Hi: r.Hi})
		}
		out = append(out, cell)
	}
	return discovery.NewCells(out)
}

func buildVerifier(t config.Tokens) (*tokens.Verifier, error) {
	keys, err := verificationKeys("tokens.job_jwt.keys", t.JobJWT.Keys)
	if err != nil {
		return nil, err
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

// verificationKeys is the one conversion of configured keys (config.KeyRef) into the keys
// tokens verifies with: a shared secret as it was read for HS*, a parsed public key otherwise.
// path names the keys in errors, e.g. "agents.keys".
func verificationKeys(path string, refs []config.KeyRef) ([]tokens.Key, error) {
	var keys []tokens.Key
	for i, k := range refs {
		if k.IsHMAC() {
			keys = append(keys, tokens.Key{ID: k.KID, Algorithm: k.Alg, Public: k.PEM})
			continue
		}
		key, err := tokens.ParsePublicKeyPEM(k.KID, k.Alg, k.PEM)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", path, i, err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}
