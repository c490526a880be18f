package integration

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// aggregationSpellings are paths under the aggregation prefix /k8s that a member could read as
// another request than the one edge parsed (the family of the runner paths' rule, in
// proxy/paths_test.go too).
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
	"/k8s/./api/v1/pods",
	"/k8s//api/v1/pods",
	"/k8s/api/v1//namespaces/team/pods",
	"/k8s%2Fapi/v1/pods",
	"/k8s/api/v1/namespaces/team/pods/x%2fy",
	"/k8s/api/v1/namespaces/team/pods/x%5Cy",
	"/k8s/api/v1/namespaces/team/pods/x%5cy",
	"/k8s/api/v1/namespaces/team/pods/x\\y",
	"/x/../k8s/api/v1/pods",
}

// TestAggregationPathRule: the real edge answers 400 to every spelling with every verb, as a
// Kubernetes Status under the prefix, and its member cluster receives nothing; a plain path
// reaches the member as sent.
func TestAggregationPathRule(t *testing.T) {
	t.Parallel()
	member := startRecordingCell(t, 9) // records every request; no real apiserver is needed
	dir := t.TempDir()
	token := randomKubeToken(t)
	tokensFile := filepath.Join(dir, "tokens.csv")
	writeFile(t, tokensFile, []byte(token+",admin,1,\"system:masters\"\n"))
	memberToken := filepath.Join(dir, "member.token")
	writeFile(t, memberToken, []byte(randomKubeToken(t)))
	f := newFrontEnv(t, func(cfg *edgeConfig) {
		cfg.Aggregation = &aggregationConfig{Prefix: "/k8s", Auth: aggAuthConfig{TokensFile: tokensFile},
			Clusters: []clusterConfig{{Name: "m1", Server: member.srv.URL, TokenFile: memberToken}}}
	})
	auth := []string{"Authorization: Bearer " + token}
	verbs := []struct{ name, method, query, body string }{
		{"get", "GET", "", ""}, {"list", "GET", "?limit=1", ""}, {"watch", "GET", "?watch=true", ""},
		{"create", "POST", "", "{}"}, {"update", "PUT", "", "{}"}, {"patch", "PATCH", "", "{}"}, {"delete", "DELETE", "", ""},
	}
	for _, path := range aggregationSpellings {
		for _, v := range verbs {
			row := frontRow{method: v.method, path: path + v.query, headers: auth, body: v.body}
			if v.body != "" {
				row.ctype = "application/json"
			}
			s := f.send(t, row)
			if s.status != 400 {
				t.Errorf("%s %s: got %d %s, want 400", v.method, path, s.status, s.body)
			}
			if got := member.take(); len(got) > 0 {
				t.Errorf("%s %s: the member received %s %s", v.method, path, got[0].method, got[0].rawPath)
			}
			if u, _ := url.ParseRequestURI(path); !strings.HasPrefix(u.Path, "/k8s/") {
				continue // not under the prefix as sent: edge's own error body
			}
			var st struct {
				Kind, Reason string
				Code         int
			}
			if json.Unmarshal([]byte(s.body), &st) != nil || st.Kind != "Status" || st.Code != 400 || st.Reason != "BadRequest" {
				t.Errorf("%s %s: body %s, want a Kubernetes Status 400 BadRequest", v.method, path, s.body)
			}
		}
	}
	// Dots inside a name are no dot segment: the request reaches the member as sent.
	const plain = "/k8s/api/v1/namespaces/team/configmaps/a.b..c"
	f.send(t, frontRow{method: "GET", path: plain, headers: auth})
	got := member.take()
	if len(got) == 0 || got[0].rawPath != strings.TrimPrefix(plain, "/k8s") {
		t.Errorf("plain path: the member received %+v, want GET %s", got, strings.TrimPrefix(plain, "/k8s"))
	}
}
