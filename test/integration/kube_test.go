package integration

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKubeMembers checks the harness the aggregation tests stand on: two real members start,
// answer kubectl, keep RBAC apart per user, let edge impersonate, and compact.
func TestKubeMembers(t *testing.T) {
	alice := kubeUser{Name: "alice", Token: randomKubeToken(t)}
	start := time.Now()
	ms := startKubeMembers(t, []string{"m1", "m2"}, alice)
	t.Logf("two members ready in %v", time.Since(start).Round(time.Millisecond))
	for _, m := range ms {
		t.Run(m.Name, func(t *testing.T) { checkKubeMember(t, m, alice) })
	}
}

func checkKubeMember(t *testing.T, m *kubeMember, alice kubeUser) {
	out, err := m.kubectl(t, m.AdminToken, "get", "namespaces", "-o", "name")
	if err != nil {
		t.Fatalf("admin lists namespaces: %v", err)
	}
	for _, ns := range []string{"namespace/default", "namespace/kube-system"} {
		if !strings.Contains(out, ns+"\n") {
			t.Errorf("namespaces: got %q, want %s among them", out, ns)
		}
	}

	m.createPods(t, "team", m.Name+"-a", m.Name+"-b")
	wantPods := "pod/" + m.Name + "-a\npod/" + m.Name + "-b\n"
	if out, err := m.kubectl(t, m.AdminToken, "get", "pods", "-A", "-o", "name"); err != nil || out != wantPods {
		t.Errorf("admin lists pods: got %q, %v, want %q", out, err, wantPods)
	}

	denied := []struct {
		name, token, user string
		args              []string
	}{
		{"alice has no RBAC", alice.Token, "alice", nil},
		{"edge alone may only impersonate", m.EdgeToken, "edge", nil},
		{"edge as alice", m.EdgeToken, "alice", []string{"--as", "alice"}},
	}
	for _, c := range denied {
		_, err := m.kubectl(t, c.token, append(c.args, "get", "pods", "-n", "team", "-o", "name")...)
		want := `(Forbidden): pods is forbidden: User "` + c.user + `" cannot list resource "pods"`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, want)
		}
	}
	out, err = m.kubectl(t, m.EdgeToken, "--as", "x", "--as-group", "system:masters", "get", "pods", "-A", "-o", "name")
	if err != nil || out != wantPods {
		t.Errorf("edge as a system:master lists pods: got %q, %v, want %q", out, err, wantPods)
	}

	// What `kubectl logs` reaches for a pod that no node runs: 204 and no body.
	code, body := m.get(t, m.AdminToken, "/api/v1/namespaces/team/pods/"+m.Name+"-a/log")
	if code != http.StatusNoContent || body != "" {
		t.Errorf("log of a Pending pod: got %d %q, want 204 and no body", code, body)
	}
	if out, err := m.kubectl(t, m.AdminToken, "logs", "-n", "team", m.Name+"-a"); err != nil || out != "" {
		t.Errorf("kubectl logs of a Pending pod: got %q, %v, want no output and no error", out, err)
	}

	checkCompact(t, m)
}

// checkCompact: after compact, a watch from a resourceVersion of before gets 200 and then one
// ERROR event with a 410 Expired Status; a watch from the compaction revision is fine.
func checkCompact(t *testing.T, m *kubeMember) {
	raw, err := m.kubectl(t, m.AdminToken, "get", "--raw", "/api/v1/namespaces/team/pods")
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(raw), &list); err != nil || list.Metadata.ResourceVersion == "" {
		t.Fatalf("list pods: no resourceVersion in %q: %v", raw, err)
	}
	old := list.Metadata.ResourceVersion
	if _, err := m.kubectl(t, m.AdminToken, "label", "pod", "-n", "team", m.Name+"-a", "changed=yes"); err != nil {
		t.Fatalf("label pod: %v", err)
	}
	rev := m.compact(t)

	out, err := m.kubectl(t, m.AdminToken, "get", "--raw", "/api/v1/namespaces/team/pods?watch=1&timeoutSeconds=10&resourceVersion="+old)
	if err != nil {
		t.Fatalf("watch from %s after compaction at %d: %v", old, rev, err)
	}
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Kind   string `json:"kind"`
			Reason string `json:"reason"`
			Code   int    `json:"code"`
		} `json:"object"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &ev) != nil ||
		ev.Type != "ERROR" || ev.Object.Kind != "Status" || ev.Object.Code != http.StatusGone || ev.Object.Reason != "Expired" {
		t.Errorf("watch from %s after compaction at %d: got %q, want one ERROR event with a 410 Expired Status", old, rev, out)
	}

	out, err = m.kubectl(t, m.AdminToken, "get", "--raw", "/api/v1/namespaces/team/pods?watch=1&timeoutSeconds=1&resourceVersion="+strconv.FormatInt(rev, 10))
	if err != nil || out != "" {
		t.Errorf("watch from the compaction revision %d: got %q, %v, want no event until the timeout", rev, out, err)
	}
}
