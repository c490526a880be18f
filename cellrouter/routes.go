package cellrouter

import (
	"net/http"

	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/hop"
)

// Routes are the router's routes in the front's table: runner and job traffic, and the legacy
// cell's, which takes every request no other route does.
func (p *Router) Routes() []front.Route {
	explain := func(kind TrafficKind) func(*http.Request) (string, map[string]any, error) {
		return func(r *http.Request) (string, map[string]any, error) {
			d, err := p.explain(r, kind)
			fields, jerr := d.Fields()
			if err == nil {
				err = jerr
			}
			return "", fields, err
		}
	}
	return []front.Route{
		{Name: "runner", Traffic: TrafficRunner.String(), Upgrade: front.UpgradeNone,
			Paths: isRunnerPath, StrictPath: true, Record: func(rec *hop.Record) { rec.Token = KindNone.String() },
			Handler: trafficHandler{p, TrafficRunner}, Explain: explain(TrafficRunner)},
		{Name: "legacy", Traffic: TrafficOther.String(), Upgrade: front.UpgradeWebSocket, Fallback: true,
			Handler: trafficHandler{p, TrafficOther}, Explain: explain(TrafficOther)},
	}
}
