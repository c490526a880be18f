package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestManifestsServerDryRun sends every manifest under deploy/ to a real kube-apiserver (v1.32)
// with `kubectl apply --dry-run=server --validate=strict`: the server decodes each object
// strictly (unknown fields refused), validates it (the preStop sleep action, Secret types,
// selectors) and runs admission, PodSecurity at the restricted level included, without storing
// anything. Negative controls prove each of those layers refuses a broken copy.
func TestManifestsServerDryRun(t *testing.T) {
	root, _ := repoRoot()
	deployDir := filepath.Join(root, "deploy")
	files, namespaces, docs := deployManifestFiles(t, deployDir)
	if len(files) == 0 {
		t.Fatal("no manifests under deploy/")
	}

	k := startKubeDryRun(t, "deploy", namespaces)
	kubectl := func(args ...string) (string, string, time.Duration, error) {
		t.Helper()
		return k.kubectl(t, args...)
	}

	dryRun := []string{"apply", "--dry-run=server", "--validate=strict"}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		stdout, stderr, took, err := kubectl(append(dryRun, "-f", f)...)
		if err != nil {
			t.Errorf("%s refused: %v\nstdout:\n%s", rel, err, stdout)
			continue
		}
		if w := unexpectedWarnings(stderr, strings.Contains(rel, "example-secrets")); w != "" {
			t.Errorf("%s: warnings (PodSecurity restricted, deprecated or duplicate fields):\n%s", rel, w)
		}
		if n := strings.Count(stdout, "(server dry run)"); n != docs[f] {
			t.Errorf("%s: %d objects accepted, the file has %d:\n%s", rel, n, docs[f], stdout)
		}
		t.Logf("%s accepted in %v:\n%s", rel, took.Round(time.Millisecond), strings.TrimSpace(stdout))
	}
	// The directories as deploy/README.md applies them, and the whole tree at once (the Helm chart
	// under deploy/helm/ is rendered first: helm_test.go).
	for _, args := range [][]string{
		{"-f", filepath.Join(deployDir, "kubernetes")},
		{"-f", filepath.Join(deployDir, "kubernetes", "sidecar")},
		{"-f", filepath.Join(deployDir, "kubernetes"), "-R"},
	} {
		stdout, stderr, took, err := kubectl(append(dryRun, args...)...)
		if w := unexpectedWarnings(stderr, slices.Contains(args, "-R")); err != nil || w != "" {
			t.Errorf("apply %v: %v\n%s%s", args, err, stdout, w)
			continue
		}
		t.Logf("apply %v: %d objects accepted in %v", args[1:], strings.Count(stdout, "(server dry run)"), took.Round(time.Millisecond))
	}
	if out, _, _, err := kubectl("get", "deployments,services,configmaps,secrets,poddisruptionbudgets,networkpolicies", "-A", "-l", "app.kubernetes.io/name", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("the dry runs stored objects (%v):\n%s", err, out)
	}

	// Negative controls on copies of edge.yaml, each refused by a different layer.
	main, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", "edge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, old, new string
		warning        bool   // accepted with a warning rather than refused
		want           string // in kubectl's output
	}{
		// decoding: a string where the schema has an integer
		{"replicas as a string", "replicas: 3", `replicas: "three"`, false, "replicas"},
		// strict field validation: a misspelt field
		{"unknown field", "readinessProbe:", "readinessProbes:", false, `unknown field "spec.template.spec.containers[0].readinessProbes"`},
		// validation: the kubelet's sleep must end within the grace period
		{"preStop sleep beyond the grace period", "sleep: {seconds: 5}", "sleep: {seconds: 50}", false, "lifecycle.preStop.sleep: Invalid value: 50"},
		// validation: a selector that does not select the pod template
		{"selector without the pods", "    matchLabels: {app.kubernetes.io/name: edge}\n  strategy:", "    matchLabels: {app.kubernetes.io/name: other}\n  strategy:", false, "selector"},
		// admission: PodSecurity restricted
		{"privilege escalation", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", true, "would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false"},
	} {
		if !bytes.Contains(main, []byte(c.old)) {
			t.Errorf("%s: edge.yaml no longer holds %q", c.name, c.old)
			continue
		}
		broken := filepath.Join(t.TempDir(), "edge.yaml")
		if err := os.WriteFile(broken, bytes.Replace(main, []byte(c.old), []byte(c.new), 1), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, _, err := kubectl(append(dryRun, "-f", broken)...)
		output := stdout + stderr
		switch {
		case c.warning && err != nil:
			t.Errorf("%s: refused, want accepted with a warning: %v\n%s", c.name, err, output)
		case !c.warning && err == nil:
			t.Errorf("%s: accepted by the server dry run:\n%s", c.name, output)
		case !strings.Contains(output, c.want) && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: the output does not name %q: %v\n%s", c.name, c.want, err, output)
		default:
			msg := stderr
			if err != nil {
				msg = err.Error()
			}
			t.Logf("%s: %s", c.name, firstLine(msg, c.want))
		}
	}
}

// deployManifestFiles lists the manifests under dir, the namespaces their objects name and the
// number of objects in each file. The Helm chart (dir/helm) is templates, not manifests.
func deployManifestFiles(t *testing.T, dir string) (files, namespaces []string, docs map[string]int) {
	t.Helper()
	docs = map[string]int{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// The chart has its own tests; the Prometheus rules are no Kubernetes objects (promtool
		// checks them).
		if err == nil && d.IsDir() && (p == filepath.Join(dir, "helm") || p == filepath.Join(dir, "prometheus")) {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, p)
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Namespace string `yaml:"namespace"`
				} `yaml:"metadata"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if doc.Kind == "" {
				continue
			}
			docs[p]++
			if ns := doc.Metadata.Namespace; ns != "" && !slices.Contains(namespaces, ns) {
				namespaces = append(namespaces, ns)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, namespaces, docs
}

// kubeDryRun is a kube-apiserver that `kubectl apply --dry-run=server` sends manifests to, with
// namespaces that enforce the restricted Pod Security Standard.
type kubeDryRun struct {
	*kubeMember
	admin string // the admin's kubeconfig
}

// startKubeDryRun starts a member and creates namespaces in it (a dry run creates nothing, so an
// object in a namespace created by the same dry run would be refused), at the restricted Pod
// Security level: enforced on pods, and warned about for the pod templates of workloads.
func startKubeDryRun(t *testing.T, name string, namespaces []string) *kubeDryRun {
	t.Helper()
	start := time.Now()
	m := startKubeMember(t, name)
	k := &kubeDryRun{kubeMember: m, admin: m.kubeconfig(t, m.AdminToken)}
	if out, _, _, err := k.kubectl(t, "version", "-o", "yaml"); err != nil || !strings.Contains(out, "minor: \"32\"") {
		t.Fatalf("kubectl version: %v\n%s", err, out)
	}
	for _, ns := range namespaces {
		m.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
`, ns))
	}
	t.Logf("apiserver ready and namespaces %v created in %v", namespaces, time.Since(start).Round(time.Millisecond))
	return k
}

// kubectl runs kubectl as admin and says how long it took.
func (k *kubeDryRun) kubectl(t *testing.T, args ...string) (stdout, stderr string, took time.Duration, err error) {
	t.Helper()
	began := time.Now()
	stdout, stderr, err = runKubectl(t, k.admin, "", args...)
	return stdout, stderr, time.Since(began), err
}

// placeholderCertWarning is the apiserver's warning for a kubernetes.io/tls Secret whose tls.crt is
// not PEM: what the placeholders of deploy/kubernetes/example-secrets/ are meant to be.
const placeholderCertWarning = "Warning: tls: failed to find any PEM data in certificate input"

// unexpectedWarnings returns kubectl's warning lines, less the placeholder certificate's when
// placeholders are expected.
func unexpectedWarnings(stderr string, placeholders bool) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "Warning") && !(placeholders && strings.TrimSpace(l) == placeholderCertWarning) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// firstLine is the line of s that holds want, or s's first line.
func firstLine(s, want string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.Contains(l, want) {
			return l
		}
	}
	return lines[0]
}
