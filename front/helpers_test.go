package front

import (
	"net/http"
	"strings"
)

// ok answers 200.
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

// testRoutes is a table with the routes the server's modules add (stand-in handlers, the same
// matches): agent connect, the API for GitLab, runner traffic and the legacy fallback, with
// more routes added after.
func testRoutes(more ...Route) *Routes {
	rt := &Routes{}
	rt.Add(
		Route{Name: "agent_connect", Path: "/-/agent/connect", Upgrade: UpgradeTunnel, Off: "this edge accepts no agents"},
		Route{Name: "gitlab_api", Prefix: "/-/api/v1/", Upgrade: UpgradeWebSocket, Off: "the API for GitLab is off"},
		Route{Name: "runner", Traffic: "runner", Paths: isRunnerPath, StrictPath: true, Handler: ok},
		Route{Name: "legacy", Traffic: "other", Upgrade: UpgradeWebSocket, Fallback: true, Handler: ok},
	)
	rt.Add(more...)
	return rt
}

func isRunnerPath(path string) bool {
	for _, p := range []string{"/api/v4/runners", "/api/v4/jobs"} {
		if strings.HasPrefix(path, p) && (len(path) == len(p) || path[len(p)] == '/') {
			return true
		}
	}
	return false
}

// aggregationAt is the aggregation's route at prefix.
func aggregationAt(prefix string, h http.Handler) Route {
	return Route{Name: "aggregation", Prefix: prefix, Upgrade: UpgradeWebSocket, StrictPath: true, Handler: h}
}
