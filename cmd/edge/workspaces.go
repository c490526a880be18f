package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/proxy"
	"gitlab.com/edge/edge/workspaceauth"
)

// workspaceParts are what outlives a reload of the workspaces section: its metrics, the store of
// single-use login values (in flight logins survive a reload; so its limits, workspaces.logins,
// change only with a restart), and the static authorizer, which re-reads its own file.
type workspaceParts struct {
	metrics *workspaceauth.Metrics
	store   workspaceauth.Store
	static  *workspaceauth.Static // nil with the HTTP authorizer
	file    string                // the static authorizer's file
	// cache is the decision cache in front of the authorizer, one per process: a change of
	// authorizer needs a restart.
	cache     *workspaceauth.Cache
	directory workspaceauth.Directory
	ssh       workspaceauth.SSHAuthorizer // the same authorizer, for SSH logins
}

func buildWorkspaceParts(cfg *config.Config, agents *agentParts, log *slog.Logger, reg prometheus.Registerer) (*workspaceParts, error) {
	w := cfg.Workspaces
	if w == nil {
		return nil, nil
	}
	m, err := workspaceauth.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	limits := workspaceauth.Limits{PerClient: w.Logins.PerClient, Total: w.Logins.Total}
	p := &workspaceParts{metrics: m, store: workspaceauth.NewMemoryStore(limits), file: w.Authorizer.File}
	if agents.redis != nil {
		p.store = workspaceauth.NewRedisStore(agents.redis, cfg.Registry.Redis.KeyPrefix, limits)
	}
	var authorizer workspaceauth.Authorizer
	if w.Authorizer.File != "" {
		if p.static, err = workspaceauth.NewStatic(w.Authorizer.File, log.With("component", "workspace authorizer")); err != nil {
			return nil, usageError{Err: fmt.Errorf("workspaces.authorizer.file: %w", err)}
		}
		authorizer, p.directory, p.ssh = p.static, p.static, p.static
	} else {
		h, err := workspaceauth.NewHTTP(workspaceauth.HTTPOptions{URL: w.Authorizer.URL, Secret: w.Authorizer.Secret, Timeout: w.Authorizer.Timeout.Duration})
		if err != nil {
			return nil, usageError{Err: fmt.Errorf("workspaces.authorizer: %w", err)}
		}
		authorizer, p.ssh = h, h
	}
	p.cache = workspaceauth.NewCache(authorizer, w.Session.Recheck.Duration, 100_000, m)
	return p, nil
}

// run re-reads the static authorizer's file when it changes, until ctx ends.
func (p *workspaceParts) run(ctx context.Context) {
	if p != nil && p.static != nil {
		p.static.Run(ctx, time.Second)
	}
}

// workspaceRoutes builds the workspace and auth host routes of one config.
func (rt *router) workspaceRoutes(cfg *config.Config) (ws, auth *proxy.HostRoute, err error) {
	w, parts := cfg.Workspaces, rt.workspaces
	if w == nil || parts == nil {
		return nil, nil, nil
	}
	a, err := workspaceauth.New(workspaceauth.Options{
		Domain: w.Domain, Insecure: w.InsecureHTTP,
		Issuer: w.OIDC.Issuer, ClientID: w.OIDC.ClientID, ClientSecret: string(w.OIDC.ClientSecret),
		RedirectURL: w.OIDC.RedirectURL, Scopes: w.OIDC.Scopes,
		SessionKey: w.Session.Key, SessionTTL: w.Session.TTL.Duration, Recheck: w.Session.Recheck.Duration,
		Authorizer: parts.cache, Cache: parts.cache, Directory: parts.directory, Store: parts.store,
		Forward: func(w http.ResponseWriter, r *http.Request, agentID string, port int) {
			rt.agents.router.Forward(w, r, proxy.AgentTarget{AgentID: agentID, Port: port, Path: r.URL.Path, RawPath: r.URL.RawPath})
		},
		Metrics: parts.metrics, Log: rt.log.With("component", "workspaces"),
	})
	if err != nil {
		return nil, nil, usageError{Err: fmt.Errorf("workspaces: %w", err)}
	}
	explain := func(host string) (map[string]any, error) {
		h, agent, ok := a.Explain(host)
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a workspace of %s", proxy.ErrNotFound, host, w.Domain)
		}
		out := map[string]any{"workspace": h.Workspace, "port": strconv.Itoa(h.Port)}
		if agent != "" {
			out["agent_id"] = agent
		}
		return out, nil
	}
	return &proxy.HostRoute{Domain: w.Domain, Handler: http.HandlerFunc(a.ServeWorkspace), Explain: explain},
		&proxy.HostRoute{Domain: a.AuthHost(), Handler: http.HandlerFunc(a.ServeAuth)}, nil
}
