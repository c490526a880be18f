package proxy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRouteMatch(t *testing.T) {
	h := http.NotFoundHandler()
	full := &Routes{
		AgentConnect: h,
		GitLabAPI:    &GitLabAPI{},
		Workspaces:   &HostRoute{Domain: "ws.example.com", Handler: h},
		Auth:         &HostRoute{Domain: "auth.ws.example.com", Handler: h},
		Aggregation:  &PrefixRoute{Prefix: "/k8s", Handler: h},
	}
	bare := &Routes{}
	tests := []struct {
		name       string
		routes     *Routes
		host, path string
		want       RouteKind
		err        error
	}{
		{"auth host before path", full, "auth.ws.example.com", "/api/v4/jobs/request", RouteAuth, nil},
		{"workspace host before path", full, "8080-w1.ws.example.com:443", "/-/agent/connect", RouteWorkspace, nil},
		{"two labels below the domain are the workspace route (its handler says 404)", full, "a.b.ws.example.com", "/x", RouteWorkspace, nil},
		{"the domain itself too", full, "WS.example.com", "/x", RouteWorkspace, nil},
		{"a look-alike suffix is not", full, "8080-w1.evilws.example.com", "/x", RouteLegacy, nil},
		{"nor the domain with more after it", full, "8080-w1.ws.example.com.evil.com", "/x", RouteLegacy, nil},
		{"agent connect", full, "edge", "/-/agent/connect", RouteAgentConnect, nil},
		{"API for GitLab", full, "edge", "/-/api/v1/agents/a/connections", RouteGitLabAPI, nil},
		{"aggregation", full, "edge", "/k8s/api/v1/pods", RouteAggregation, nil},
		{"aggregation prefix is a path prefix", full, "edge", "/k8sx", RouteLegacy, nil},
		{"runner", full, "edge", "/api/v4/jobs/request", RouteRunner, nil},
		{"runners", full, "edge", "/api/v4/runners", RouteRunner, nil},
		{"not a runner path", full, "edge", "/api/v4/runnersx", RouteLegacy, nil},
		{"legacy", full, "edge", "/", RouteLegacy, nil},
		{"agents not configured", bare, "edge", "/-/agent/connect", RouteAgentConnect, ErrNotConfigured},
		{"API not configured", bare, "edge", "/-/api/v1/x", RouteGitLabAPI, ErrNotConfigured},
		{"hosts not configured", bare, "8080-w1.ws.example.com", "/x", RouteLegacy, nil},
		{"aggregation not configured", bare, "edge", "/k8s/api", RouteLegacy, nil},
		{"bad path", bare, "edge", "/api/v4/x/../jobs/request", RouteLegacy, ErrBadPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://"+tt.host+tt.path, nil)
			m := tt.routes.match(r)
			if m.kind != tt.want || !errors.Is(m.err, tt.err) || (tt.err == nil) != (m.err == nil) {
				t.Errorf("match: got %s %v, want %s %v", m.kind, m.err, tt.want, tt.err)
			}
		})
	}
}
