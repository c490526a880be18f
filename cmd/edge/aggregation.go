package main

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/aggregate"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/proxy"
	"gitlab.com/edge/edge/tokens"
)

// aggregationParts outlive a reload: the metrics, and the open watches, so a reload ends only the
// watches of members it removes or changes.
type aggregationParts struct {
	metrics *aggregate.Metrics
	watches *aggregate.Watches
}

func buildAggregationParts(cfg *config.Config, reg prometheus.Registerer) (*aggregationParts, error) {
	if cfg.Aggregation == nil {
		return nil, nil
	}
	m, err := aggregate.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &aggregationParts{metrics: m, watches: aggregate.NewWatches()}, nil
}

// aggregationRoute builds the aggregation prefix route of one config.
func (rt *router) aggregationRoute(cfg *config.Config) (*proxy.PrefixRoute, error) {
	a, parts := cfg.Aggregation, rt.aggregation
	if a == nil || parts == nil {
		return nil, nil
	}
	verifyJWT, err := callerVerifier(a.Auth)
	if err != nil {
		return nil, usageError{Err: err}
	}
	auth, err := aggregate.NewAuthenticator(a.Auth.Tokens, verifyJWT)
	if err != nil {
		return nil, usageError{Err: fmt.Errorf("aggregation.auth: %w", err)}
	}
	var members []aggregate.Member
	for _, c := range a.Clusters {
		members = append(members, aggregate.Member{Name: c.Name, Server: c.Server, Token: string(c.Token), CA: c.CA, InsecureSkipVerify: c.InsecureSkipVerify})
	}
	p, err := aggregate.New(aggregate.Options{
		Prefix: a.Prefix, Members: members, Authenticate: auth.Authenticate,
		Partial: a.MemberDown == config.MemberDownPartial, Placement: a.Placement,
		Metrics: parts.metrics, Log: rt.log.With("component", "aggregation"),
	}, parts.watches)
	if err != nil {
		return nil, usageError{Err: fmt.Errorf("aggregation: %w", err)}
	}
	return &proxy.PrefixRoute{
		Prefix: a.Prefix, Handler: p, WriteError: aggregate.WriteError,
		Explain: func(r *http.Request) map[string]any { return p.Explain(r) },
	}, nil
}

// endChangedWatches ends the open aggregated watches of members a reload removed or changed;
// the others stay open.
func endChangedWatches(old, next *config.Config, parts *aggregationParts, log *slog.Logger) {
	if parts == nil || old.Aggregation == nil {
		return
	}
	kept := map[string]config.ClusterMember{}
	if next.Aggregation != nil {
		for _, c := range next.Aggregation.Clusters {
			kept[c.Name] = c
		}
	}
	gone := map[string]bool{}
	for _, c := range old.Aggregation.Clusters {
		n, ok := kept[c.Name]
		if !ok || n.Server != c.Server || string(n.Token) != string(c.Token) || string(n.CA) != string(c.CA) || n.InsecureSkipVerify != c.InsecureSkipVerify {
			gone[c.Name] = true
		}
	}
	if len(gone) > 0 {
		n := parts.watches.End(gone)
		log.Info("aggregation: members removed or changed; their watches end and clients relist", "members", len(gone), "watches", n)
	}
}

// callerVerifier checks the callers' JWTs with tokens' verification, as every other JWT of edge;
// nil when no key is configured (only the token file then).
func callerVerifier(auth config.AggregationAuth) (aggregate.VerifyJWT, error) {
	if len(auth.Keys) == 0 {
		return nil, nil
	}
	keys, err := verificationKeys("aggregation.auth.keys", auth.Keys)
	if err != nil {
		return nil, err
	}
	v, err := tokens.NewCallerVerifier(tokens.CallerVerifierOptions{Keys: keys, Issuer: auth.Issuer, Audience: auth.Audience})
	if err != nil {
		return nil, fmt.Errorf("aggregation.auth.keys: %w", err)
	}
	return func(token string) (aggregate.User, error) {
		c, err := v.Verify(token)
		return aggregate.User{Name: c.Subject, Groups: c.Groups}, err
	}, nil
}
