package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kubectlTimeout bounds one kubectl run; watches in tests pass timeoutSeconds well below it.
const kubectlTimeout = time.Minute

// writeKubeconfig writes a kubeconfig for server (verified with caFile) and token into dir, under
// a name of its own, and returns its path. It works for a member as for edge.
func writeKubeconfig(t *testing.T, dir, server, caFile, token string) string {
	t.Helper()
	cfg := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{"name": "c", "cluster": map[string]any{
			"server": server, "certificate-authority": caFile,
		}}},
		"users":           []any{map[string]any{"name": "u", "user": map[string]any{"token": token}}},
		"contexts":        []any{map[string]any{"name": "c", "context": map[string]any{"cluster": "c", "user": "u"}}},
		"current-context": "c",
	}
	b, err := json.Marshal(cfg) // JSON is YAML
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	f, err := os.CreateTemp(dir, "kubeconfig-*")
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	return f.Name()
}

// runKubectl runs /usr/bin/kubectl with kubeconfig (and stdin, when not empty). A failed run's
// error holds kubectl's stderr ("Error from server (Forbidden): ..."). Tokens stay in the
// kubeconfig, never on the command line, so no error message carries one.
func runKubectl(t *testing.T, kubeconfig, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := lookBinary(t, "kubectl", "kubectl")
	ctx, cancel := context.WithTimeout(t.Context(), kubectlTimeout)
	defer cancel()
	full := append([]string{
		"--kubeconfig=" + kubeconfig,
		// Discovery cache next to the kubeconfig, not in $HOME.
		"--cache-dir=" + filepath.Join(filepath.Dir(kubeconfig), "kubectl-cache"),
	}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}

// kubeconfig is m's kubeconfig for token, written once.
func (m *kubeMember) kubeconfig(t *testing.T, token string) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.kubeconfigs[token]; ok {
		return p
	}
	p := writeKubeconfig(t, m.dir, m.Server, m.CAFile, token)
	m.kubeconfigs[token] = p
	return p
}

// kubectl runs kubectl against m as the holder of token.
func (m *kubeMember) kubectl(t *testing.T, token string, args ...string) (stdout string, err error) {
	t.Helper()
	stdout, _, err = runKubectl(t, m.kubeconfig(t, token), "", args...)
	return stdout, err
}

// apply runs `kubectl apply -f -` with yaml as admin and fails the test if it fails.
func (m *kubeMember) apply(t *testing.T, yaml string) {
	t.Helper()
	if _, _, err := runKubectl(t, m.kubeconfig(t, m.AdminToken), yaml, "apply", "-f", "-"); err != nil {
		t.Fatalf("member %s: %v", m.Name, err)
	}
}

// createPods creates namespace ns (if absent) and a pod of each name in it, labelled
// app=edge-test. The pods stay Pending: nothing schedules or runs them.
func (m *kubeMember) createPods(t *testing.T, ns string, names ...string) {
	t.Helper()
	docs := []string{fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)}
	for _, name := range names {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels:
    app: edge-test
spec:
  containers:
  - name: main
    image: registry.invalid/none:1
`, name, ns))
	}
	m.apply(t, strings.Join(docs, "---\n"))
}

// etcdctl runs etcdctl (API v3) against m's etcd and returns its stdout.
func (m *kubeMember) etcdctl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, lookBinary(t, "etcdctl", "etcd-client"), append([]string{"--endpoints=" + m.Etcd}, args...)...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("etcdctl %s on %s: %v: %s", strings.Join(args, " "), m.Name, err, errOut.String())
	}
	return string(out)
}

// compact compacts m's etcd so that every resourceVersion m handed out before the call is too
// old: a watch from one gets an ERROR event with a 410 Expired Status. It returns the
// compaction revision.
//
// A watch from resourceVersion rv reads etcd from rv+1. Compacting at the current revision alone
// would leave rv+1 readable for the latest rv but without the previous value of the key, which the
// apiserver answers with a 500 ERROR event ("etcd event received with PrevKv=nil"), so compact
// first writes two keys outside the apiserver's /registry prefix.
func (m *kubeMember) compact(t *testing.T) int64 {
	t.Helper()
	var rev int64
	for range 2 {
		var put struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
		}
		out := m.etcdctl(t, "put", "/edge-test/compact", strconv.FormatInt(time.Now().UnixNano(), 10), "-w", "json")
		if err := json.Unmarshal([]byte(out), &put); err != nil || put.Header.Revision == 0 {
			t.Fatalf("etcdctl put on %s: %q: %v", m.Name, out, err)
		}
		rev = put.Header.Revision
	}
	m.etcdctl(t, "compact", strconv.FormatInt(rev, 10))
	return rev
}
