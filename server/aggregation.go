package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"gitlab.com/edge/edge/aggregate"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/tokens"
)

// aggregation is the Kubernetes-API aggregation proxy. What outlives a reload: the metrics, and
// the open watches, so a reload ends only the watches of members it removes or changes.
type aggregation struct {
	metrics *aggregate.Metrics // nil without an aggregation section
	watches *aggregate.Watches
	// members are those of the config in force, whose watches a reload may end.
	members []config.ClusterMember
	log     *slog.Logger
	guard   *guard.Guard
}

func newAggregation(cfg *config.Config, d deps) (*aggregation, error) {
	g := &aggregation{log: d.log, guard: d.guard}
	if cfg.Aggregation == nil {
		return g, nil
	}
	m, err := aggregate.NewMetrics(d.reg)
	if err != nil {
		return nil, err
	}
	g.metrics, g.watches = m, aggregate.NewWatches()
	return g, nil
}

func (g *aggregation) module() module {
	return module{name: "aggregation",
		settings: []setting{{name: "aggregation", same: func(a, b *config.Config) bool { return (a.Aggregation == nil) == (b.Aggregation == nil) }}},
		routes:   g.routes,
		status:   g,
	}
}

// routes adds the aggregation prefix route of one config; putting it in force ends the watches
// of the members it removes or changes.
func (g *aggregation) routes(cfg *config.Config, next *table) error {
	a := cfg.Aggregation
	if g.metrics == nil {
		return nil
	}
	if a == nil {
		next.onApply(func() { g.endChangedWatches(nil); g.members = nil })
		return nil
	}
	verifyJWT, err := callerVerifier(a.Auth)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	auth, err := aggregate.NewAuthenticator(a.Auth.Tokens, verifyJWT)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("aggregation.auth: %w", err)}
	}
	var members []aggregate.Member
	for _, c := range a.Clusters {
		members = append(members, aggregate.Member{Name: c.Name, Server: c.Server, Token: string(c.Token), CA: c.CA, InsecureSkipVerify: c.InsecureSkipVerify})
	}
	p, err := aggregate.New(aggregate.Options{
		Prefix: a.Prefix, Members: members, Authenticate: auth.Authenticate,
		Partial: a.MemberDown == config.MemberDownPartial, Placement: a.Placement,
		Metrics: g.metrics, Log: g.log.With("component", "aggregation"), Guard: g.guard,
	}, g.watches)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("aggregation: %w", err)}
	}
	next.routes.Add(front.Route{Name: "aggregation", Prefix: a.Prefix, Upgrade: front.UpgradeWebSocket, StrictPath: true,
		Handler: p, WriteError: aggregate.WriteError,
		Explain: func(r *http.Request) (string, map[string]any, error) {
			fields := p.Explain(r)
			rule, _ := fields["rule"].(string)
			if rule == "" {
				rule = "the Kubernetes API of the member clusters"
			}
			return rule, fields, nil
		}})
	next.onApply(func() {
		g.endChangedWatches(a.Clusters)
		g.members = a.Clusters
	})
	return nil
}

// endChangedWatches ends the open aggregated watches of members that next removes or changes;
// the others stay open.
func (g *aggregation) endChangedWatches(next []config.ClusterMember) {
	kept := map[string]config.ClusterMember{}
	for _, c := range next {
		kept[c.Name] = c
	}
	gone := map[string]bool{}
	for _, c := range g.members {
		n, ok := kept[c.Name]
		if !ok || n.Server != c.Server || string(n.Token) != string(c.Token) || string(n.CA) != string(c.CA) || n.InsecureSkipVerify != c.InsecureSkipVerify {
			gone[c.Name] = true
		}
	}
	if len(gone) > 0 {
		n := g.watches.End(gone)
		g.log.Info("aggregation: members removed or changed; their watches end and clients relist", "members", len(gone), "watches", n)
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

// status shows the aggregation's members: their open watches and last answers.
func (g *aggregation) status(_ context.Context, s *Status) {
	if g.watches == nil {
		return
	}
	open, last := g.watches.Open(), g.metrics.Last()
	for _, m := range g.members {
		s.Aggregation = append(s.Aggregation, MemberStatus{Name: m.Name, Server: m.Server, OpenWatches: open[m.Name], Last: last[m.Name]})
	}
}
