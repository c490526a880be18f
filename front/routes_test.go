package front

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"gitlab.com/edge/edge/hop"
)

func TestRouteMatch(t *testing.T) {
	full := testRoutes(
		Route{Name: "workspace", Domain: "ws.example.com", Handler: ok},
		Route{Name: "auth", Host: "auth.ws.example.com", Handler: ok},
		aggregationAt("/k8s", ok),
	)
	full.paths[0].Handler, full.paths[1].Handler = ok, ok // agents and the API for GitLab configured
	bare := testRoutes()
	tests := []struct {
		name       string
		routes     *Routes
		host, path string
		want       string
		err        error
	}{
		{"auth host before path", full, "auth.ws.example.com", "/api/v4/jobs/request", "auth", nil},
		{"workspace host before path", full, "8080-w1.ws.example.com:443", "/-/agent/connect", "workspace", nil},
		{"two labels below the domain are the workspace route (its handler says 404)", full, "a.b.ws.example.com", "/x", "workspace", nil},
		{"the domain itself too", full, "WS.example.com", "/x", "workspace", nil},
		{"a look-alike suffix is not", full, "8080-w1.evilws.example.com", "/x", "legacy", nil},
		{"nor the domain with more after it", full, "8080-w1.ws.example.com.evil.com", "/x", "legacy", nil},
		{"agent connect", full, "edge", "/-/agent/connect", "agent_connect", nil},
		{"API for GitLab", full, "edge", "/-/api/v1/agents/a/connections", "gitlab_api", nil},
		{"aggregation", full, "edge", "/k8s/api/v1/pods", "aggregation", nil},
		{"aggregation prefix is a path prefix", full, "edge", "/k8sx", "legacy", nil},
		{"runner", full, "edge", "/api/v4/jobs/request", "runner", nil},
		{"runners", full, "edge", "/api/v4/runners", "runner", nil},
		{"not a runner path", full, "edge", "/api/v4/runnersx", "legacy", nil},
		{"legacy", full, "edge", "/", "legacy", nil},
		{"agents not configured", bare, "edge", "/-/agent/connect", "agent_connect", hop.ErrNotConfigured},
		{"API not configured", bare, "edge", "/-/api/v1/x", "gitlab_api", hop.ErrNotConfigured},
		{"hosts not configured", bare, "8080-w1.ws.example.com", "/x", "legacy", nil},
		{"aggregation not configured", bare, "edge", "/k8s/api", "legacy", nil},
		{"bad path", bare, "edge", "/api/v4/x/../jobs/request", "legacy", hop.ErrBadPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://"+tt.host+tt.path, nil)
			m := tt.routes.match(r)
			if m.route.Name != tt.want || !errors.Is(m.err, tt.err) || (tt.err == nil) != (m.err == nil) {
				t.Errorf("match: got %s %v, want %s %v", m.route.Name, m.err, tt.want, tt.err)
			}
		})
	}
}

// A table without a fallback route is not put in force.
func TestSwapNeedsAFallback(t *testing.T) {
	f := New(Options{})
	rt := &Routes{}
	rt.Add(Route{Name: "runner", Paths: isRunnerPath, Handler: ok})
	if err := f.Swap(rt); err == nil {
		t.Fatal("a table without a fallback was put in force")
	}
	if err := f.Swap(testRoutes()); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("fallback answered %d", rec.Code)
	}
}
