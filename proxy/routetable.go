package proxy

import (
	"fmt"
	"net/http"
)

// routeSpec is everything the front knows of one kind of route, declared once: its name, the
// edge_requests_total label of its traffic, the protocol switch it allows, how a request on it
// is served and how `edge explain` describes one, and, for a route whose feature may be off,
// whether it is configured and what to say when not. Adding a route is one entry here, its
// RouteKind, and its place in Routes.match.
type routeSpec struct {
	name    string
	traffic string // "" means name
	upgrade upgradeRule
	serve   func(rt *Routes, w *recorder, r *http.Request)
	explain func(rt *Routes, r *http.Request, e *Explanation) error
	// configured is nil for a route that exists whenever match picks it.
	configured func(rt *Routes) bool
	off        string // the refusal's message when not configured
	// errors is the route's own error format for the front's refusals; nil: WriteError's.
	errors func(rt *Routes) func(http.ResponseWriter, int, string, string)
}

// routeSpecs is indexed by RouteKind; it never changes.
var routeSpecs = [numRouteKinds]routeSpec{
	RouteLegacy: {name: "legacy", traffic: TrafficOther.String(), upgrade: upgradeWebSocket,
		serve:   func(rt *Routes, w *recorder, r *http.Request) { rt.Runner.serve(w, r, TrafficOther) },
		explain: explainRunner(TrafficOther)},
	RouteRunner: {name: "runner", traffic: TrafficRunner.String(), upgrade: upgradeNone,
		serve:   func(rt *Routes, w *recorder, r *http.Request) { rt.Runner.serve(w, r, TrafficRunner) },
		explain: explainRunner(TrafficRunner)},
	RouteAgentConnect: {name: "agent_connect", upgrade: upgradeTunnel,
		serve:      func(rt *Routes, w *recorder, r *http.Request) { rt.AgentConnect.ServeHTTP(w, r) },
		explain:    explainRule("agent token verified; the agent id comes from the token"),
		configured: func(rt *Routes) bool { return rt.AgentConnect != nil },
		off:        "this edge accepts no agents (agents.keys is not set)"},
	RouteGitLabAPI: {name: "gitlab_api", upgrade: upgradeWebSocket,
		serve:      func(rt *Routes, w *recorder, r *http.Request) { rt.GitLabAPI.ServeHTTP(w, r) },
		explain:    explainGitLabAPI,
		configured: func(rt *Routes) bool { return rt.GitLabAPI != nil },
		off:        "the API for GitLab is off (gitlab_api is not set)"},
	RouteAggregation: {name: "aggregation", upgrade: upgradeWebSocket,
		serve:   func(rt *Routes, w *recorder, r *http.Request) { rt.Aggregation.Handler.ServeHTTP(w, r) },
		explain: explainAggregation,
		errors:  func(rt *Routes) func(http.ResponseWriter, int, string, string) { return rt.Aggregation.WriteError }},
	RouteWorkspace: {name: "workspace", upgrade: upgradeWebSocket,
		serve: func(rt *Routes, w *recorder, r *http.Request) { rt.Workspaces.Handler.ServeHTTP(w, r) },
		explain: explainHost(func(rt *Routes) *HostRoute { return rt.Workspaces },
			"session for exactly this host, then the authorizer, then the agent's tunnel to the port in the host")},
	RouteAuth: {name: "auth", upgrade: upgradeNone,
		serve: func(rt *Routes, w *recorder, r *http.Request) { rt.Auth.Handler.ServeHTTP(w, r) },
		explain: explainHost(func(rt *Routes) *HostRoute { return rt.Auth },
			"the login's own host: /oauth/start, /oauth/callback, /logout")},
	RouteInternal: {name: "internal", upgrade: upgradeInternal,
		serve:      func(rt *Routes, w *recorder, r *http.Request) { rt.Internal.ServeHTTP(w, r) },
		explain:    explainRule("served by the internal handler"),
		configured: func(rt *Routes) bool { return rt.Internal != nil }},
}

func (k RouteKind) spec() *routeSpec { return &routeSpecs[k] }

func (k RouteKind) String() string { return k.spec().name }

// trafficLabel keeps the edge_requests_total kind label of earlier releases for runner and
// legacy traffic.
func (k RouteKind) trafficLabel() string {
	if s := k.spec(); s.traffic != "" {
		return s.traffic
	}
	return k.String()
}

// upgradeRule says which protocol switch a route lets through.
func (k RouteKind) upgradeRule() upgradeRule { return k.spec().upgrade }

// notConfigured is the refusal of a route whose feature is off in rt, or nil.
func (k RouteKind) notConfigured(rt *Routes) error {
	s := k.spec()
	if s.configured == nil || s.configured(rt) {
		return nil
	}
	if s.off == "" {
		return ErrNotConfigured
	}
	return fmt.Errorf("%w: %s", ErrNotConfigured, s.off)
}

// errorWriter is the error format of a route's refusals: its own when it has one, else nil
// (WriteError).
func (rt *Routes) errorWriter(kind RouteKind) func(http.ResponseWriter, int, string, string) {
	if s := kind.spec(); s.errors != nil {
		return s.errors(rt)
	}
	return nil
}

func explainRule(rule string) func(*Routes, *http.Request, *Explanation) error {
	return func(_ *Routes, _ *http.Request, e *Explanation) error {
		e.Rule = rule
		return nil
	}
}

func explainRunner(kind TrafficKind) func(*Routes, *http.Request, *Explanation) error {
	return func(rt *Routes, r *http.Request, e *Explanation) error {
		d, err := rt.Runner.explain(r, kind)
		e.Decision = &d
		return err
	}
}

func explainGitLabAPI(_ *Routes, r *http.Request, e *Explanation) error {
	call, err := parseAPICall(r.Method, r.URL)
	if err != nil {
		return err
	}
	e.API = &call
	switch {
	case call.op != opProxy:
		e.Rule = "registry query (a GitLab API JWT is required)"
	case call.target.ConnectionID != "":
		e.Rule = "one named connection of the agent: local tunnel, else its holder's internal listener"
	default:
		e.Rule = "any connection of the agent: local tunnel, else a holder from the registry, waiting up to agents.wait"
	}
	return nil
}

func explainAggregation(rt *Routes, r *http.Request, e *Explanation) error {
	e.Rule = "the Kubernetes API of the member clusters"
	if rt.Aggregation.Explain != nil {
		e.Fields = rt.Aggregation.Explain(r)
		if rule, ok := e.Fields["rule"].(string); ok {
			e.Rule = rule
		}
	}
	return nil
}

func explainHost(route func(*Routes) *HostRoute, rule string) func(*Routes, *http.Request, *Explanation) error {
	return func(rt *Routes, r *http.Request, e *Explanation) error {
		e.Rule = rule
		if hr := route(rt); hr.Explain != nil {
			fields, err := hr.Explain(r.Host)
			e.Fields = fields
			return err
		}
		return nil
	}
}
