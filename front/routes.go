package proxy

import (
	"net"
	"net/http"
	"strings"

	"gitlab.com/edge/edge/tunnel"
)

// RouteKind is what kind of request the front decided a request is.
type RouteKind uint8

const (
	RouteLegacy RouteKind = iota
	RouteRunner
	RouteAgentConnect
	RouteGitLabAPI
	RouteAggregation
	RouteWorkspace
	RouteAuth
	RouteInternal
	numRouteKinds
)

// gitlabAPIPrefix is where the API for GitLab lives on the public listener.
const gitlabAPIPrefix = "/-/api/v1/"

// HostRoute serves a host name: the auth host exactly, workspace hosts as any name in Domain.
type HostRoute struct {
	Domain  string
	Handler http.Handler
	// Explain describes what a host names, for `edge explain` (nil: nothing to say). An error is
	// the refusal the handler would answer before any login.
	Explain func(host string) (map[string]any, error)
}

// PrefixRoute serves every path below Prefix.
type PrefixRoute struct {
	Prefix  string
	Handler http.Handler
	// Explain describes what the handler would do with a request, for `edge explain`.
	Explain func(r *http.Request) map[string]any
	// WriteError, when set, answers the front's refusals of this route (the path rule, the header
	// policy) in the route's own format, as its handler answers errors: the aggregation's is a
	// Kubernetes Status, which kubectl shows. nil: WriteError's JSON.
	WriteError func(w http.ResponseWriter, status int, cause, message string)
}

// Routes is the whole route table of the public and internal listeners, built from one config
// and swapped whole on a reload. A nil part is a feature that is not configured: its paths answer
// 404 through the one error writer, and everything else goes to the legacy cell.
type Routes struct {
	Runner       *Proxy       // runner and legacy traffic; required
	AgentConnect http.Handler // the tunnel server at /-/agent/connect; nil: agents.keys not set
	GitLabAPI    *GitLabAPI   // nil: gitlab_api not set
	Internal     http.Handler // the internal listener's handler; nil: no internal listener
	Workspaces   *HostRoute   // nil until workspaces are served
	Auth         *HostRoute
	Aggregation  *PrefixRoute
	Headers      HeaderPolicy // the public listener's
	AccessLog    bool
}

// route is the match: a kind and, for a refusal, why.
type route struct {
	kind RouteKind
	err  error
}

// match decides a request's route: host first, then path. serve and explain both call it.
func (rt *Routes) match(r *http.Request) route {
	if rt.Workspaces != nil || rt.Auth != nil {
		host := hostOnly(r.Host)
		if rt.Auth != nil && strings.EqualFold(host, hostOnly(rt.Auth.Domain)) {
			return route{kind: RouteAuth}
		}
		if rt.Workspaces != nil && isBelow(host, rt.Workspaces.Domain) {
			return route{kind: RouteWorkspace}
		}
	}
	if err := checkPath(r.URL, rt.pathKind); err != nil {
		return route{kind: rt.pathKind(r.URL.Path), err: err}
	}
	kind := rt.pathKind(r.URL.Path)
	return route{kind: kind, err: kind.notConfigured(rt)}
}

// pathKind classifies a path alone: edge's own paths, the aggregation prefix, runner traffic,
// then legacy.
func (rt *Routes) pathKind(path string) RouteKind {
	switch {
	case path == tunnel.ConnectPath:
		return RouteAgentConnect
	case strings.HasPrefix(path, gitlabAPIPrefix):
		return RouteGitLabAPI
	case rt.Aggregation != nil && hasPathPrefix(path, rt.Aggregation.Prefix):
		return RouteAggregation
	case isRunnerPath(path):
		return RouteRunner
	}
	return RouteLegacy
}

func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// isBelow tells whether host is domain or any name below it: the whole workspace domain is the
// workspace route, whose handler refuses what is not exactly <port>-<name>.<domain> with 404.
func isBelow(host, domain string) bool {
	if strings.EqualFold(host, domain) {
		return true
	}
	return len(host) > len(domain)+1 && host[len(host)-len(domain)-1] == '.' && strings.EqualFold(host[len(host)-len(domain):], domain)
}
