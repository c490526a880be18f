package proxy

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestPathRule(t *testing.T) {
	rt := &Routes{}
	tests := []struct {
		path    string
		refused bool
	}{
		{"/api/v4/jobs/request", false},
		{"/api/v4/jobs/../jobs/request", true},
		{"/api/v4/jobs/%2e%2e/jobs/request", true},
		{"/api/v4/jobs/%2E./jobs/request", true},
		{"/api/v4/x/../jobs/request", true},
		{"/x/../api/v4/runners", true},
		{"//api/v4/jobs/request", true},
		{"/api/v4/jobs//1/trace", true},
		{"/api/v4/jobs%2Frequest", true},
		{"/api/v4/jobs/1%2ftrace", true},
		{"/api/v4/jobs/1%5Ctrace", true},
		{"/api/v4/jobs/./request", true},
		{"/-/api/v1/../../api/v4/jobs/request", true},
		{"/api/v4/projects/group%2Fproject", false},
		{"/group/project/-/blob/main/a%2Fb", false},
		{"/group//project", false},
		{"/-/api/v1/agents/a/proxy/80/x%2Fy/../z", false},
		{"/-/api/v1/agents/a/../../../api/v4/jobs/request", true},
		{"/users/sign_in", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			u, err := url.ParseRequestURI(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			err = checkPath(u, rt.pathKind)
			if got := errors.Is(err, ErrBadPath); got != tt.refused {
				t.Errorf("refused: got %v (%v), want %v", got, err, tt.refused)
			}
		})
	}
}

// FuzzPathRule: whatever the path, a request the front lets through is classified the same as
// sent and as a lenient backend would normalise it, and a runner path is never odd.
func FuzzPathRule(f *testing.F) {
	for _, s := range []string{"/api/v4/jobs/request", "/api/v4/x/../jobs/request", "//api/v4/runners", "/api/v4/jobs%2F1",
		"/-/api/v1/agents/a/proxy/80/%2e%2e/", "/a\\b", "/api/v4/jobs/%2e/request", "/-/agent/connect"} {
		f.Add(s)
	}
	rt := &Routes{}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return
		}
		if checkPath(u, rt.pathKind) != nil {
			return
		}
		asSent, normal := rt.pathKind(u.Path), rt.pathKind(normalPath(u.Path))
		if asSent != normal {
			t.Errorf("%q let through: route %s as sent, %s normalised", raw, asSent, normal)
		}
		if asSent == RouteRunner && pathOdd(u) {
			t.Errorf("%q let through: an odd runner path", raw)
		}
	})
}
