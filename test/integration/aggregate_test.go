package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestAggregationWithKubectl: kubectl through edge over two real kube-apiservers.
func TestAggregationWithKubectl(t *testing.T) {
	t.Parallel()
	e := newAggEnv(t, "")
	m1, m2 := e.members[0], e.members[1]
	m1.createPods(t, "team", "p1", "p2")
	m2.createPods(t, "team", "q1")
	// bob may read pods in m1's team namespace only.
	m1.apply(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: team}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-reads-pods, namespace: team}
subjects: [{kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}]
roleRef: {kind: Role, name: pod-reader, apiGroup: rbac.authorization.k8s.io}
`)

	t.Run("get pods -A is one Table with every column", func(t *testing.T) {
		out, _, err := e.kubectl(t, "admin", "", "get", "pods", "-A")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if f := strings.Fields(lines[0]); strings.Join(f, " ") != "NAMESPACE NAME READY STATUS RESTARTS AGE" {
			t.Errorf("header %q, want all of a pod Table's columns", lines[0])
		}
		for _, name := range []string{"p1", "p2", "q1"} {
			if !strings.Contains(out, "team        "+name) && !strings.Contains(out, " "+name+" ") {
				t.Errorf("no row for %s:\n%s", name, out)
			}
		}
		if len(lines) != 4 {
			t.Errorf("%d lines, want a header and 3 rows:\n%s", len(lines), out)
		}
	})
	t.Run("explain", func(t *testing.T) {
		out, stderr, code := runEdge(t, "explain", "--config", e.edge.ConfigPath, e.server+"/api/v1/namespaces/team/pods?watch=1")
		var v map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("explain: %d %s %s", code, out, stderr)
		}
		members, _ := v["members"].([]any)
		if v["route"] != "aggregation" || v["verb"] != "watch" || v["resource"] != "pods" || len(members) != 2 {
			t.Errorf("explain: %s", out)
		}
	})
	t.Run("chunk-size 1 pages across members", func(t *testing.T) {
		out, _, err := e.kubectl(t, "admin", "", "get", "pods", "-n", "team", "--chunk-size=1", "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(strings.Fields(out), " ") != "pod/p1 pod/p2 pod/q1" {
			t.Errorf("pages: %q, want p1 p2 q1", out)
		}
	})
	t.Run("label and replace reach the owner", func(t *testing.T) {
		if _, _, err := e.kubectl(t, "admin", "", "label", "pod", "p1", "-n", "team", "edge=was-here"); err != nil {
			t.Fatal(err)
		}
		if got, _ := m1.kubectl(t, m1.AdminToken, "get", "pod", "p1", "-n", "team", "-o", "jsonpath={.metadata.labels.edge}"); got != "was-here" {
			t.Errorf("label at m1: %q", got)
		}
		obj, _, err := e.kubectl(t, "admin", "", "get", "pod", "p2", "-n", "team", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(obj, `"app": "edge-test"`, `"app": "edge-test", "replaced": "yes"`, 1)
		if _, _, err := e.kubectl(t, "admin", changed, "replace", "-f", "-"); err != nil {
			t.Fatalf("replace: %v", err)
		}
		if got, _ := m1.kubectl(t, m1.AdminToken, "get", "pod", "p2", "-n", "team", "-o", "jsonpath={.metadata.labels.replaced}"); got != "yes" {
			t.Errorf("replaced label at m1: %q", got)
		}
		// The same object again: its resourceVersion is stale now.
		_, _, err = e.kubectl(t, "admin", changed, "replace", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), "Conflict") && !strings.Contains(err.Error(), "has been modified") {
			t.Errorf("stale replace: %v, want a 409 Conflict", err)
		}
	})
	t.Run("logs reach the owner", func(t *testing.T) {
		_, _, err := e.kubectl(t, "admin", "", "logs", "q1", "-n", "team", "-c", "nope")
		if err == nil || !strings.Contains(err.Error(), "container nope is not valid for pod q1") {
			t.Errorf("logs through edge: %v, want m2's answer", err)
		}
	})
	t.Run("one member's RBAC denies, the other allows", func(t *testing.T) {
		if out, _, err := e.kubectl(t, "bob", "", "get", "pod", "p1", "-n", "team", "-o", "name"); err != nil || strings.TrimSpace(out) != "pod/p1" {
			t.Errorf("bob gets p1 (m1 allows): %q %v", out, err)
		}
		_, _, err := e.kubectl(t, "bob", "", "get", "pod", "q1", "-n", "team")
		if err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("bob gets q1 (m2 denies): %v, want Forbidden", err)
		}
		_, _, err = e.kubectl(t, "bob", "", "get", "pods", "-n", "team")
		if err == nil || !strings.Contains(err.Error(), "m2") {
			t.Errorf("bob lists (m2 denies): %v, want Forbidden naming m2", err)
		}
	})

	// The version of a list, for the watches below.
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	raw, _, err := e.kubectl(t, "admin", "", "get", "--raw", "/k8s/api/v1/namespaces/team/pods") // --raw takes the path on the host, prefix included
	if err != nil || json.Unmarshal([]byte(raw), &list) != nil {
		t.Fatalf("raw list: %v", err)
	}

	t.Run("get -w sees both members; a resumed watch misses nothing", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		kc := writeKubeconfig(t, e.dir, e.server, e.caFile, e.tokens["admin"])
		cmd := exec.CommandContext(ctx, lookBinary(t, "kubectl", "kubectl"), "--kubeconfig="+kc,
			"--cache-dir="+filepath.Join(e.dir, "kubectl-cache"), "get", "pods", "-n", "team", "-w", "-o", "name", "--watch-only")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
		seen := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				seen <- strings.TrimSpace(sc.Text())
			}
			close(seen)
		}()
		// Watches are open before the pods are made: wait until edge has a watch stream.
		poll.Until(t, 30*time.Second, "kubectl's watch through edge", func() bool {
			n, err := metricSum(e.edge.OpsURL+"/metrics", "edge_aggregation_watch_streams", "")
			return err == nil && n >= 1
		})
		m1.createPods(t, "team", "p3")
		m2.createPods(t, "team", "q2")
		want := map[string]bool{"pod/p3": true, "pod/q2": true}
		for len(want) > 0 {
			select {
			case line, ok := <-seen:
				if !ok {
					t.Fatalf("kubectl -w ended; still waiting for %v", want)
				}
				delete(want, line)
			case <-ctx.Done():
				t.Fatalf("kubectl -w did not show %v", want)
			}
		}

		// Resume from the list's version: every change since then, from both members.
		resp := e.request(ctx, t, "admin", "/api/v1/namespaces/team/pods?watch=1&resourceVersion="+list.Metadata.ResourceVersion)
		defer resp.Body.Close()
		got := map[string]bool{}
		dec := json.NewDecoder(resp.Body)
		for !(got["p3"] && got["q2"]) {
			var ev struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				} `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("resumed watch: %v after %v", err, got)
			}
			got[ev.Object.Metadata.Name] = true
		}
		if got["p1"] || got["q1"] {
			t.Errorf("the resumed watch replayed objects older than its version: %v", got)
		}
	})
	t.Run("delete reaches the owner", func(t *testing.T) {
		if _, _, err := e.kubectl(t, "admin", "", "delete", "pod", "q1", "-n", "team", "--wait=false"); err != nil {
			t.Fatal(err)
		}
		if out, err := m2.kubectl(t, m2.AdminToken, "get", "pods", "-n", "team", "-o", "name"); err != nil || strings.Contains(out, "pod/q1") {
			t.Errorf("q1 still at m2: %q %v", out, err)
		}
	})
	t.Run("a stale watch after compaction gets 410", func(t *testing.T) {
		m1.compact(t)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		resp := e.request(ctx, t, "admin", "/api/v1/namespaces/team/pods?watch=1&resourceVersion="+list.Metadata.ResourceVersion)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		last := lines[len(lines)-1]
		if resp.StatusCode != 200 || !strings.Contains(last, `"type":"ERROR"`) || !strings.Contains(last, `"code":410`) {
			t.Errorf("stale watch: %d, last event %s; want 200 and an ERROR 410", resp.StatusCode, last)
		}
	})
	t.Run("a member down: fail, then partial", func(t *testing.T) {
		m2.stop()
		_, _, err := e.kubectl(t, "admin", "", "get", "pods", "-A")
		if err == nil || !strings.Contains(err.Error(), "m2") {
			t.Errorf("default policy: %v, want a 503 naming m2", err)
		}
		var cfg map[string]any
		b, err := os.ReadFile(e.edge.ConfigPath)
		if err != nil || yaml.Unmarshal(b, &cfg) != nil {
			t.Fatalf("read config: %v", err)
		}
		cfg["aggregation"].(map[string]any)["member_down"] = "partial"
		writeFile(t, e.edge.ConfigPath, mustYAML(t, cfg))
		e.edge.cmd.Process.Signal(syscall.SIGHUP)
		poll.Until(t, 10*time.Second, "the reload", func() bool {
			n, err := metricSum(e.edge.OpsURL+"/metrics", "edge_config_generation", "")
			return err == nil && n == 2
		})
		out, stderr, err := e.kubectl(t, "admin", "", "get", "pods", "-A", "-o", "name")
		if err != nil || !strings.Contains(out, "pod/p1") || !strings.Contains(stderr, "m2") {
			t.Errorf("partial policy: %q, warnings %q, %v; want m1's pods and a warning naming m2", out, stderr, err)
		}
	})
}
