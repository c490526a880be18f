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
		err = m.kind.spec().explain(rt, r, &e)
	}
	if err != nil {
		e.Status, e.Cause = statusOf(err)
		e.Error = err.Error()
	}
	return e
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
