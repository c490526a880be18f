package server

import (
	"fmt"
	"log/slog"
	"net/url"
	"sync/atomic"

	"gitlab.com/edge/edge/cellrouter"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/tracing"
	"gitlab.com/edge/edge/wire"
)

// runner is runner and job traffic: the cells, the token rules and the routing limits, with the
// metrics and learned job ids that outlive a reload (what was learned stays learned). The cells'
// health and the admission of jobs are modules of their own, which its proxy uses.
type runner struct {
	metrics   *cellrouter.Metrics
	learned   *discovery.LearnedJobs
	cells     *cellHealth
	admission *jobAdmission
	tracer    *tracing.Tracer
	log       *slog.Logger
	guard     *guard.Guard
	parking   *wire.Parking
	moves     *moves.Table                      // the organizations moved to another cell, which runner tokens follow
	current   atomic.Pointer[cellrouter.Router] // the proxy in force, told of moves
}

// newRunner makes the runner module; metrics are the front door's, which its proxy counts on.
func newRunner(cfg *config.Config, d deps, metrics *cellrouter.Metrics, cells *cellHealth, admission *jobAdmission, orgMoves *moves.Table) *runner {
	r := &runner{
		moves:     orgMoves,
		metrics:   metrics,
		learned:   discovery.NewLearnedJobs(cfg.Routing.LearnedJobs.Size, cfg.Routing.LearnedJobs.TTL.Duration),
		cells:     cells,
		admission: admission,
		tracer:    d.tracer,
		log:       d.log,
		guard:     d.guard,
		parking:   d.parking,
	}
	orgMoves.OnChange(func(prev *moves.Move, m moves.Move) {
		if p := r.current.Load(); p != nil {
			p.OrgMoved(prev, m)
		}
	})
	return r
}

func (r *runner) module() module {
	return module{name: "runner",
		settings: []setting{
			{name: "cells", reload: true, same: func(a, b *config.Config) bool { return config.SameCells(a.Cells, b.Cells) }},
			{name: "routing", reload: true, same: func(a, b *config.Config) bool { return config.SameRouting(a.Routing, b.Routing) }},
			{name: "tokens", reload: true, same: func(a, b *config.Config) bool { return config.SameTokens(a.Tokens, b.Tokens) }},
		},
		routes: func(cfg *config.Config, next *table) error {
			p, err := r.proxy(cfg)
			if err != nil {
				return err
			}
			next.routes.Add(p.Routes()...)
			next.routes.Retire = p.CloseIdleConnections
			next.onApply(func() { r.cells.use(p.CellHealth()); r.current.Store(p) })
			return nil
		},
	}
}

// proxy builds the runner proxy of one config: cells, token keys, classify, limits.
func (r *runner) proxy(cfg *config.Config) (*cellrouter.Router, error) {
	cells, err := buildCells(cfg)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	opts := cellrouter.Options{
		Cells:           cells,
		RejectInvalid:   cfg.Tokens.JobJWT.OnInvalid == config.OnInvalidReject,
		BodyTokenLimit:  int64(cfg.Routing.BodyTokenLimit),
		BodyReadTimeout: cfg.Limits.ReadHeaderTimeout.Duration,
		LongPollTimeout: cfg.Routing.LongPollTimeout.Duration,
		UpstreamTimeout: cfg.Routing.UpstreamTimeout.Duration,
		DialTimeout:     cfg.Routing.DialTimeout.Duration,
		Learned:         r.learned,
		Health:          r.cells.health,
		Tracer:          r.tracer,
		Log:             r.log,
		Metrics:         r.metrics,
		Parking:         r.parking,
		Moves:           r.moves,
	}
	if opts.Admission, err = r.admission.of(cfg); err != nil {
		return nil, cli.UsageError{Err: err}
	}
	switch j := cfg.Tokens.JobJWT; {
	case !j.Enabled:
		// No tokens.job_jwt section: the job-JWT rule is off (the startup line says so).
	case j.Verify:
		v, err := jobVerifier(cfg.Tokens)
		if err != nil {
			return nil, cli.UsageError{Err: err}
		}
		opts.Verifier = v
	default:
		opts.RouteUnverified = true
	}
	if cfg.Routing.ClassifyURL != "" {
		c, err := discovery.NewClassifier(discovery.ClassifierOptions{
			URL:     cfg.Routing.ClassifyURL,
			Timeout: cfg.Routing.ClassifyTimeout.Duration,
			Log:     r.log,
			Guard:   r.guard,
		})
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("routing.classify_url: %w", err)}
		}
		opts.Classifier = c
	}
	return cellrouter.New(opts)
}

func buildCells(cfg *config.Config) (*discovery.Cells, error) {
	out := make([]discovery.Cell, 0, len(cfg.Cells))
	for i, c := range cfg.Cells {
		cell := discovery.Cell{ID: c.ID, Legacy: c.Legacy, PreserveHost: c.KeepsHost()}
		for _, s := range c.Addresses() {
			u, err := url.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("cells[%d].url: %w", i, err)
			}
			cell.URLs = append(cell.URLs, u)
		}
		if h := cfg.CellHealth(i); h != nil {
			cell.Check = &discovery.Check{Path: h.Path, Interval: h.Interval.Duration, Timeout: h.Timeout.Duration,
				HealthyAfter: h.HealthyAfter, UnhealthyAfter: h.UnhealthyAfter}
		}
		for _, r := range c.Ranges {
			cell.Ranges = append(cell.Ranges, discovery.IDRange{Lo: r.Lo, Hi: r.Hi})
		}
		out = append(out, cell)
	}
	return discovery.NewCells(out)
}

func jobVerifier(t config.Tokens) (*tokens.Verifier, error) {
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
