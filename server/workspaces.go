package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"gitlab.com/edge/edge/agentrouter"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/workspaceauth"
)

// workspaces are workspace URLs: the login on the auth host, sessions, the authorization check,
// then the agent's tunnel. What outlives a reload of the section: its metrics, the store of
// single-use login values (in flight logins survive a reload; so its limits, workspaces.logins,
// change only with a restart), and the static authorizer, which re-reads its own file.
type workspaces struct {
	metrics *workspaceauth.Metrics
	store   workspaceauth.Store
	static  *workspaceauth.Static // nil with the HTTP authorizer
	file    string                // the static authorizer's file
	// cache is the decision cache in front of the authorizer, one per process: a change of
	// authorizer needs a restart.
	cache     *workspaceauth.Cache
	directory workspaceauth.Directory
	ssh       workspaceauth.SSHAuthorizer // the same authorizer, for SSH logins
	agents    *agents
	log       *slog.Logger
	guard     *guard.Guard
}

// newWorkspaces makes the workspaces module; without a workspaces section it serves nothing and
// only says that turning them on needs a restart.
func newWorkspaces(cfg *config.Config, d deps, agents *agents) (*workspaces, error) {
	w := cfg.Workspaces
	p := &workspaces{agents: agents, log: d.log, guard: d.guard}
	if w == nil {
		return p, nil
	}
	m, err := workspaceauth.NewMetrics(d.reg)
	if err != nil {
		return nil, err
	}
	limits := workspaceauth.Limits{PerClient: w.Logins.PerClient, Total: w.Logins.Total}
	p.metrics, p.store, p.file = m, workspaceauth.NewMemoryStore(limits), w.Authorizer.File
	if agents.redis != nil {
		p.store = workspaceauth.NewRedisStore(agents.redis, cfg.Registry.Redis.KeyPrefix, limits)
	}
	var authorizer workspaceauth.Authorizer
	if w.Authorizer.File != "" {
		if p.static, err = workspaceauth.NewStatic(w.Authorizer.File, d.log.With("component", "workspace authorizer")); err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("workspaces.authorizer.file: %w", err)}
		}
		authorizer, p.directory, p.ssh = p.static, p.static, p.static
	} else {
		h, err := workspaceauth.NewHTTP(workspaceauth.HTTPOptions{URL: w.Authorizer.URL, Secret: w.Authorizer.Secret, Timeout: w.Authorizer.Timeout.Duration})
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("workspaces.authorizer: %w", err)}
		}
		authorizer, p.ssh = h, h
	}
	p.cache = workspaceauth.NewCache(authorizer, w.Session.Recheck.Duration, 100_000, m).UseGuard(d.guard)
	return p, nil
}

func (p *workspaces) module() module {
	// both: a rule about a setting inside the section, which only counts when the section is
	// there before and after (turning it on or off is the workspaces setting).
	both := func(same func(a, b *config.Workspaces) bool) func(a, b *config.Config) bool {
		return func(a, b *config.Config) bool {
			return a.Workspaces == nil || b.Workspaces == nil || same(a.Workspaces, b.Workspaces)
		}
	}
	return module{name: "workspaces",
		settings: []setting{
			{name: "workspaces", same: func(a, b *config.Config) bool { return (a.Workspaces == nil) == (b.Workspaces == nil) }},
			// The decision cache in front of the authorizer is one per process; the static
			// authorizer re-reads its own file.
			{name: "workspaces.authorizer", same: both(func(a, b *config.Workspaces) bool {
				return a.Authorizer.File == b.Authorizer.File && a.Authorizer.URL == b.Authorizer.URL &&
					bytes.Equal(a.Authorizer.Secret, b.Authorizer.Secret) && a.Authorizer.Timeout == b.Authorizer.Timeout &&
					a.Session.Recheck == b.Session.Recheck
			})},
			{name: "workspaces.logins", same: both(func(a, b *config.Workspaces) bool { return a.Logins == b.Logins })},
		},
		routes: p.routes,
		stages: []stage{{name: "workspace authorizer", phase: phaseParts, start: p.run}},
	}
}

// run re-reads the static authorizer's file when it changes, until the stage stops.
func (p *workspaces) run(life context.Context, run *goroutines) error {
	if p.static != nil {
		// A crash ends the re-reading only: the rules last read stay in force.
		run.Go("background", func() { p.static.Run(life, time.Second) })
	}
	return nil
}

// routes adds the workspace and auth host routes of one config.
func (p *workspaces) routes(cfg *config.Config, next *table) error {
	w, parts := cfg.Workspaces, p
	if w == nil || p.cache == nil {
		return nil
	}
	a, err := workspaceauth.New(workspaceauth.Options{
		Domain: w.Domain, Insecure: w.InsecureHTTP,
		Issuer: w.OIDC.Issuer, ClientID: w.OIDC.ClientID, ClientSecret: string(w.OIDC.ClientSecret),
		RedirectURL: w.OIDC.RedirectURL, Scopes: w.OIDC.Scopes,
		SessionKey: w.Session.Key, SessionTTL: w.Session.TTL.Duration, Recheck: w.Session.Recheck.Duration,
		Authorizer: parts.cache, Cache: parts.cache, Directory: parts.directory, Store: parts.store,
		Forward: func(w http.ResponseWriter, r *http.Request, agentID string, port int) {
			p.agents.router.Forward(w, r, agentrouter.AgentTarget{AgentID: agentID, Port: port, Path: r.URL.Path, RawPath: r.URL.RawPath})
		},
		Metrics: parts.metrics, Log: p.log.With("component", "workspaces"), Guard: p.guard,
	})
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("workspaces: %w", err)}
	}
	explain := func(r *http.Request) (string, map[string]any, error) {
		h, agent, ok := a.Explain(r.Host)
		if !ok {
			return "", nil, fmt.Errorf("%w: %q is not a workspace of %s", hop.ErrNotFound, r.Host, w.Domain)
		}
		out := map[string]any{"workspace": h.Workspace, "port": strconv.Itoa(h.Port)}
		if agent != "" {
			out["agent_id"] = agent
		}
		return "", out, nil
	}
	next.routes.Add(
		front.Route{Name: "workspace", Domain: w.Domain, Upgrade: front.UpgradeWebSocket, Handler: http.HandlerFunc(a.ServeWorkspace),
			Explain: explain, Rule: "session for exactly this host, then the authorizer, then the agent's tunnel to the port in the host"},
		front.Route{Name: "auth", Host: a.AuthHost(), Upgrade: front.UpgradeNone, Handler: http.HandlerFunc(a.ServeAuth),
			Rule: "the login's own host: /oauth/start, /oauth/callback, /logout"})
	return nil
}
