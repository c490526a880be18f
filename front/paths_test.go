package front

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"gitlab.com/edge/edge/aggregate"
	"gitlab.com/edge/edge/hop"
)

func TestPathRule(t *testing.T) {
	rt := testRoutes(aggregationAt("/k8s", ok))
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
		{"/k8s/api/v1/namespaces/a/pods/p1", false},
		{"/k8s/api/v1/namespaces/a/configmaps/x%2F..%2F..%2Fapi%2Fv1%2Fsecrets", true},
		{"/k8s/apis/../api/v1/secrets", true},
		{"/k8s/api/v1/namespaces/a/pods/x/proxy/../../../metrics", true},
		{"/k8s//api/v1/pods", true},
		{"/k8s/api/v1/pods/x%5Cy", true},
		{"/x/../k8s/api/v1/pods", true},
		{"/k8sx/../k8s", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			u, err := url.ParseRequestURI(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			err = checkPath(u, rt.pathRoute)
			if got := errors.Is(err, hop.ErrBadPath); got != tt.refused {
				t.Errorf("refused: got %v (%v), want %v", got, err, tt.refused)
			}
		})
	}
}

// FuzzPathRule: whatever the path, a request the front lets through is classified the same as
// sent and as a lenient backend would normalise it, and a runner path or a path under the
// aggregation prefix is never odd.
func FuzzPathRule(f *testing.F) {
	for _, s := range []string{"/api/v4/jobs/request", "/api/v4/x/../jobs/request", "//api/v4/runners", "/api/v4/jobs%2F1",
		"/-/api/v1/agents/a/proxy/80/%2e%2e/", "/a\\b", "/api/v4/jobs/%2e/request", "/-/agent/connect",
		"/k8s/api/v1/namespaces/x/configmaps/x%2F..%2F..%2Fapi%2Fv1%2Fsecrets", "/k8s/apis/../api/v1/secrets", "/k8s%2Fapi", "/x/../k8s/api"} {
		f.Add(s)
	}
	rt := testRoutes(aggregationAt("/k8s", ok))
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return
		}
		if checkPath(u, rt.pathRoute) != nil {
			return
		}
		asSent, normal := rt.pathRoute(u.Path), rt.pathRoute(normalPath(u.Path))
		if asSent != normal {
			t.Errorf("%q let through: route %s as sent, %s normalised", raw, asSent.Name, normal.Name)
		}
		if asSent.StrictPath && pathOdd(u) {
			t.Errorf("%q let through: an odd %s path", raw, asSent.Name)
		}
	})
}

// aggregationSpellings are paths under the aggregation prefix /k8s that a member could read as
// another request than the one edge parsed: dot segments in every spelling, doubled slashes,
// encoded slashes and backslashes, a raw backslash. The same family as the runner paths'.
var aggregationSpellings = []string{
	"/k8s/api/v1/namespaces/team/configmaps/x%2F..%2F..%2Fapi%2Fv1%2Fsecrets",
	"/k8s/apis/../api/v1/secrets",
	"/k8s/api/v1/namespaces/team/pods/x/proxy/../../../metrics",
	"/k8s/api/v1/namespaces/team/pods/../secrets",
	"/k8s/api/v1/namespaces/team/pods/%2e%2e/secrets",
	"/k8s/api/v1/namespaces/team/pods/%2E%2E/secrets",
	"/k8s/api/v1/namespaces/team/pods/.%2e/secrets",
	"/k8s/api/v1/namespaces/team/pods/%2E./secrets",
	"/k8s/api/v1/namespaces/team/pods/./p1",
	"/k8s/api/v1/namespaces/team/pods/%2e/p1",
	"/k8s/api/v1/namespaces/team/pods/p1/..",
	"/k8s/api/v1/namespaces/team/pods/p1/.",
	"/k8s/./api/v1/pods",
	"/k8s/..",
	"/k8s//api/v1/pods",
	"/k8s/api/v1//namespaces/team/pods",
	"/k8s/api/v1/namespaces/team/pods/p1//",
	"/k8s%2Fapi/v1/pods",
	"/k8s/api/v1/namespaces/team/pods/x%2fy",
	"/k8s/api/v1/namespaces/team/pods/x%2Fy",
	"/k8s/api/v1/namespaces/team/pods/x%5Cy",
	"/k8s/api/v1/namespaces/team/pods/x%5cy",
	"/k8s/api/v1/namespaces/team/pods/x\\y",
	"/k8s\\api/v1/pods",
	"/x/../k8s/api/v1/pods",
}

// aggregationVerbs are the methods (and watch) of every Kubernetes verb: the rule is one for all.
var aggregationVerbs = []struct{ name, method, query string }{
	{"get", "GET", ""}, {"list", "GET", "?limit=1"}, {"watch", "GET", "?watch=true"}, {"create", "POST", ""},
	{"update", "PUT", ""}, {"patch", "PATCH", ""}, {"delete", "DELETE", ""},
}

// TestAggregationPathFamily: every spelling, with every verb, gets 400 from the front, as a
// Kubernetes Status when the path is under the prefix, and the aggregation handler (which asks
// the members) never runs; paths without such parts reach it.
func TestAggregationPathFamily(t *testing.T) {
	var reached []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Method+" "+r.URL.EscapedPath())
		w.WriteHeader(http.StatusOK)
	})
	agg := aggregationAt("/k8s", handler)
	agg.WriteError = aggregate.WriteError
	front := New(Options{})
	if err := front.Swap(testRoutes(agg)); err != nil {
		t.Fatal(err)
	}
	for _, path := range aggregationSpellings {
		for _, v := range aggregationVerbs {
			t.Run(v.name+" "+path, func(t *testing.T) {
				reached = nil
				rec := httptest.NewRecorder()
				front.ServeHTTP(rec, httptest.NewRequest(v.method, path+v.query, strings.NewReader("{}")))
				if rec.Code != http.StatusBadRequest {
					t.Fatalf("got %d %s, want 400", rec.Code, rec.Body)
				}
				if len(reached) > 0 {
					t.Errorf("the aggregation handler ran: %v", reached)
				}
				if u, _ := url.ParseRequestURI(path); !under(u.Path, "/k8s") {
					return // not under the prefix as sent: edge's own error body
				}
				var st struct {
					Kind, Status, Reason, Message string
					Code                          int
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Code != 400 || st.Reason != "BadRequest" || st.Status != "Failure" {
					t.Errorf("body: got %s (%v), want a Status with code 400, reason BadRequest", rec.Body, err)
				}
				if !strings.Contains(st.Message, "dot segments") {
					t.Errorf("message %q does not say why", st.Message)
				}
			})
		}
	}
	for _, path := range []string{"/k8s/api/v1/namespaces/team/pods/p1", "/k8s/api/v1/namespaces/team/configmaps/a.b..c", "/k8s/apis/apps/v1/deployments", "/k8s/api"} {
		for _, v := range aggregationVerbs {
			reached = nil
			rec := httptest.NewRecorder()
			front.ServeHTTP(rec, httptest.NewRequest(v.method, path+v.query, strings.NewReader("{}")))
			if rec.Code != http.StatusOK || len(reached) != 1 || reached[0] != v.method+" "+path {
				t.Errorf("%s %s: got %d, reached %v; want it passed on as sent", v.method, path, rec.Code, reached)
			}
		}
	}
}
