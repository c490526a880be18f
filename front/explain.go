package front

import (
	"encoding/json"
	"net/http"

	"gitlab.com/edge/edge/hop"
)

// Explanation is what `edge explain` prints: the route the front picks for a request, and what
// that route's handler would decide, without sending anything anywhere.
type Explanation struct {
	Method  string
	Path    string
	Route   string
	Traffic string
	Status  int // a refusal's status; 0 when the request would be sent on
	Cause   string
	Error   string
	Rule    string         // what edge does with the request
	Fields  map[string]any // what the route's handler says of it (the decision, the host, ...)
}

// Explain runs the header policy, the match and the route's own decision, as ServeHTTP would.
// It may read a small body prefix (and replays it), as serving does.
func (f *Front) Explain(r *http.Request) Explanation {
	rt := f.routes.Load()
	e := Explanation{Method: r.Method, Path: r.URL.Path}
	trusted := rt.Headers.trusted(r.RemoteAddr)
	err := rt.Headers.clean(r, trusted)
	m := rt.match(r)
	e.Route, e.Traffic, e.Rule = m.route.Name, m.route.traffic(), m.route.Rule
	if err == nil {
		err = m.err
	}
	if err == nil && m.route.Explain != nil {
		var rule string
		rule, e.Fields, err = m.route.Explain(r)
		if rule != "" {
			e.Rule = rule
		}
	}
	if err != nil {
		e.Status, e.Cause = hop.StatusOf(err)
		e.Error = err.Error()
	}
	return e
}

func (e Explanation) MarshalJSON() ([]byte, error) {
	out := map[string]any{"method": e.Method, "path": e.Path, "traffic": e.Traffic}
	for k, v := range e.Fields {
		out[k] = v
	}
	out["route"] = e.Route
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
