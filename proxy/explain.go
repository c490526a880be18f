package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Explanation is what `edge explain` prints: the route the front picks for a request, and what
// that route's handler would decide, without sending anything anywhere.
type Explanation struct {
	Method   string
	Path     string
	Route    RouteKind
	Decision *Decision // runner and legacy routes
	API      *apiCall  // the API for GitLab
	Status   int       // a refusal's status; 0 when the request would be sent on
	Cause    string
	Error    string
	Rule     string         // for routes without a Decision: what edge does with the request
	Fields   map[string]any // what a host route says of the host (workspace, port, agent)
}

// Explain runs the header policy, the match and the route's own decision, as ServeHTTP would.
// It may read a small body prefix (and replays it), as serving does.
func (f *Front) Explain(r *http.Request) Explanation {
	rt := f.routes.Load()
	e := Explanation{Method: r.Method, Path: r.URL.Path}
	trusted := rt.Headers.trusted(r.RemoteAddr)
	err := rt.Headers.clean(r, trusted)
	m := rt.match(r)
	e.Route = m.kind
	if err == nil {
		err = m.err
	}
	if err == nil {
		err = f.explainRoute(rt, r, &e)
	}
	if err != nil {
		e.Status, e.Cause = statusOf(err)
		e.Error = err.Error()
	}
	return e
}

func (f *Front) explainRoute(rt *Routes, r *http.Request, e *Explanation) error {
	switch e.Route {
	case RouteRunner, RouteLegacy:
		kind := TrafficRunner
		if e.Route == RouteLegacy {
			kind = TrafficOther
		}
		d, err := rt.Runner.explain(r, kind)
		e.Decision = &d
		return err
	case RouteAgentConnect:
		e.Rule = "agent token verified; the agent id comes from the token"
	case RouteGitLabAPI:
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
	case RouteAggregation:
		e.Rule = "the Kubernetes API of the member clusters"
		if rt.Aggregation.Explain != nil {
			e.Fields = rt.Aggregation.Explain(r)
			if rule, ok := e.Fields["rule"].(string); ok {
				e.Rule = rule
			}
		}
	case RouteWorkspace, RouteAuth:
		hr := rt.Workspaces
		e.Rule = "session for exactly this host, then the authorizer, then the agent's tunnel to the port in the host"
		if e.Route == RouteAuth {
			hr, e.Rule = rt.Auth, "the login's own host: /oauth/start, /oauth/callback, /logout"
		}
		if hr.Explain != nil {
			fields, err := hr.Explain(r.Host)
			e.Fields = fields
			return err
		}
	default:
		e.Rule = "served by the " + e.Route.String() + " handler"
	}
	return nil
}

func (e Explanation) MarshalJSON() ([]byte, error) {
	out := map[string]any{"method": e.Method, "path": e.Path, "route": e.Route.String(), "traffic": e.Route.trafficLabel()}
	if d := e.Decision; d != nil {
		raw, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
		out["route"] = e.Route.String()
	}
	if a := e.API; a != nil {
		out["api"] = a.op.String()
		if a.projectID != "" {
			out["project_id"] = a.projectID
		}
		if a.target.AgentID != "" {
			out["agent_id"] = a.target.AgentID
		}
		if a.target.ConnectionID != "" {
			out["connection_id"] = a.target.ConnectionID
		}
		if a.op == opProxy {
			out["port"] = strconv.Itoa(a.target.Port)
			out["upstream_path"] = a.target.RawPath
		}
	}
	for k, v := range e.Fields {
		out[k] = v
	}
	if e.Rule != "" {
		out["rule"] = e.Rule
	}
	if e.Status != 0 {
		out["status"] = e.Status
		out["cause"] = e.Cause
		out["error"] = e.Error
		for _, k := range []string{"cell", "cell_url", "rule"} {
			delete(out, k)
		}
	}
	return json.Marshal(out)
}
