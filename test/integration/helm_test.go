package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The chart's tests: helm (v3.22, built from the Go module proxy by scripts/helm.sh) lints and
// renders deploy/helm/edge with the default values and the values files of its ci/ directory; a
// kube-apiserver takes each rendering with `kubectl apply --dry-run=server --validate=strict`,
// the edge binary takes each rendered edge.yaml with `edge check`, and the rendering of
// ci/plain-values.yaml must be the objects of deploy/kubernetes/. Each check has a negative
// control: values it must refuse.

// helmChart is the chart, relative to the repository root.
const helmChart = "deploy/helm/edge"

// helmNamespace is where the dry runs send the renderings: it enforces restricted Pod Security.
const helmNamespace = "edge-chart"

// helmVariant is one set of values: the default, or values files of the chart's ci/ directory.
type helmVariant struct {
	name string
	args []string // helm flags: -f FILE (relative to the chart), --set
}

var helmVariants = []helmVariant{
	{"default", nil},
	// the built-in Redis, the ServiceMonitor, a ClusterIP Service, no TLS Secret
	{"full", []string{"-f", "ci/full-values.yaml"}},
	// the objects of deploy/kubernetes/
	{"plain", []string{"-f", "ci/plain-values.yaml"}},
}

// runHelm runs helm in the chart's directory, its cache and config in a directory of the test.
func runHelm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := scriptTool(t, "helm.sh")
	root, _ := repoRoot()
	home := filepath.Join(os.TempDir(), fmt.Sprintf("edge-integration-%d", os.Getpid()), "helm-home")
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = filepath.Join(root, helmChart)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}

// renderChart is `helm template` of the chart as release edge in namespace ns.
func renderChart(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	stdout, _, err := runHelm(t, append([]string{"template", "edge", ".", "--namespace", ns}, args...)...)
	return stdout, err
}

// mustRender is renderChart that fails the test when helm does.
func mustRender(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := renderChart(t, ns, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// yamlDocs decodes each non-empty document of a stream.
func yamlDocs(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(stream))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("decode YAML: %v\n%s", err, stream)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// docKey is kind/name of a Kubernetes object.
func docKey(doc map[string]any) string {
	return fmt.Sprintf("%v/%v", doc["kind"], digMap(doc, "metadata", "name"))
}

// digMap follows keys through nested maps; nil when one is missing.
func digMap(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestHelmLint runs `helm lint --strict` with each set of values.
func TestHelmLint(t *testing.T) {
	start := time.Now()
	bin := scriptTool(t, "helm.sh")
	t.Logf("scripts/helm.sh: %s in %v", bin, time.Since(start).Round(time.Millisecond))
	if out, _, err := runHelm(t, "version", "--short"); err != nil || !strings.HasPrefix(out, "v3.22.0") {
		t.Fatalf("helm version: %v %q", err, out)
	}
	for _, v := range helmVariants {
		out, _, err := runHelm(t, append([]string{"lint", ".", "--strict", "--namespace", helmNamespace}, v.args...)...)
		if err != nil || !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
			t.Errorf("%s: helm lint: %v\n%s", v.name, err, out)
			continue
		}
		t.Logf("%s: %s", v.name, firstLine(out, "linted"))
	}
	// Negative controls: lint refuses a chart whose version is not SemVer (on a copy), and helm
	// refuses to render without a Redis (lint only logs a missing required value).
	broken := t.TempDir()
	root, _ := repoRoot()
	if err := os.CopyFS(broken, os.DirFS(filepath.Join(root, helmChart))); err != nil {
		t.Fatal(err)
	}
	chartYAML := filepath.Join(broken, "Chart.yaml")
	raw, err := os.ReadFile(chartYAML)
	if err != nil || !bytes.Contains(raw, []byte("\nversion: ")) {
		t.Fatalf("Chart.yaml: %v, or no version line", err)
	}
	if err := os.WriteFile(chartYAML, bytes.Replace(raw, []byte("\nversion: "), []byte("\nversion: one-"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runHelm(t, "lint", broken, "--strict"); err == nil || !strings.Contains(out, "SemVer") {
		t.Errorf("lint of a chart with version one-...: %v, want a failure naming SemVer\n%s", err, out)
	} else {
		t.Logf("a version that is not SemVer: %s", firstLine(out, "SemVer"))
	}
	if _, err := renderChart(t, helmNamespace, "--set", "redis.address="); err == nil || !strings.Contains(err.Error(), "set redis.address") {
		t.Errorf("helm template without a Redis address: %v, want a failure naming redis.address", err)
	} else {
		t.Logf("without a Redis address: %s", firstLine(err.Error(), "Error:"))
	}
}

// TestHelmTemplateServerDryRun sends each rendering to a real kube-apiserver (v1.32) with
// `kubectl apply --dry-run=server --validate=strict` in a namespace that enforces restricted Pod
// Security, the ServiceMonitor CRD installed first: any refusal or warning fails it. Broken
// values prove the server refuses what it should.
func TestHelmTemplateServerDryRun(t *testing.T) {
	renders := map[string]string{}
	for _, v := range helmVariants {
		renders[v.name] = mustRender(t, helmNamespace, v.args...)
	}
	k := startKubeDryRun(t, "helm", []string{helmNamespace})
	k.apply(t, serviceMonitorCRD)
	k.apply(t, prometheusRuleCRD)
	if _, _, _, err := k.kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com"); err != nil {
		t.Fatal(err)
	}

	dryRun := func(name, rendered string) (stdout, stderr string, took time.Duration, err error) {
		t.Helper()
		f := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(f, []byte(rendered), 0o600); err != nil {
			t.Fatal(err)
		}
		return k.kubectl(t, "apply", "--dry-run=server", "--validate=strict", "-f", f)
	}
	for _, v := range helmVariants {
		docs := yamlDocs(t, renders[v.name])
		stdout, stderr, took, err := dryRun(v.name, renders[v.name])
		if err != nil {
			t.Errorf("%s refused: %v\nstdout:\n%s", v.name, err, stdout)
			continue
		}
		if w := unexpectedWarnings(stderr, false); w != "" {
			t.Errorf("%s: warnings (PodSecurity restricted, deprecated or duplicate fields):\n%s", v.name, w)
		}
		if n := strings.Count(stdout, "(server dry run)"); n != len(docs) {
			t.Errorf("%s: %d objects accepted, the rendering has %d:\n%s", v.name, n, len(docs), stdout)
		}
		t.Logf("%s accepted in %v:\n%s", v.name, took.Round(time.Millisecond), strings.TrimSpace(stdout))
	}
	var kinds []string
	for _, doc := range yamlDocs(t, renders["full"]) {
		kinds = append(kinds, fmt.Sprint(doc["kind"]))
	}
	for _, want := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "StatefulSet", "ServiceMonitor", "PrometheusRule"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("ci/full-values.yaml renders no %s: %v", want, kinds)
		}
	}
	if out, _, _, err := k.kubectl(t, "get", "deployments,statefulsets,services,configmaps,poddisruptionbudgets,networkpolicies,servicemonitors,prometheusrules", "-n", helmNamespace, "-l", "app.kubernetes.io/instance", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("the dry runs stored objects (%v):\n%s", err, out)
	}

	// Negative controls: values the chart renders and the server refuses.
	for _, c := range []struct {
		name string
		args []string
		want string // in kubectl's output
	}{
		// decoding: a string where the schema has an integer
		{"replicas as a string", []string{"--set", "replicas=three"}, "replicas"},
		// validation: the kubelet's sleep must end within the grace period
		{"preStop sleep beyond the grace period", []string{"--set", "preStopSleepSeconds=50"}, "lifecycle.preStop.sleep: Invalid value: 50"},
		// validation: an enum
		{"unknown pull policy", []string{"--set", "image.pullPolicy=Sometimes"}, `Unsupported value: "Sometimes"`},
		// the CRD's schema: the ServiceMonitor is validated, not taken as it comes
		{"ServiceMonitor interval", []string{"-f", "ci/full-values.yaml", "--set", "serviceMonitor.interval=soon"}, "spec.endpoints[0].interval"},
		// the PrometheusRule is validated too: a threshold that is a duration must read as one
		{"PrometheusRule for", []string{"-f", "ci/full-values.yaml", "--set", "prometheusRule.thresholds.cellDownFor=soon"}, "spec.groups[0].rules[0].for"},
	} {
		rendered := mustRender(t, helmNamespace, c.args...)
		stdout, stderr, _, err := dryRun("broken", rendered)
		output := stdout + stderr
		switch {
		case err == nil:
			t.Errorf("%s: accepted by the server dry run:\n%s", c.name, output)
		case !strings.Contains(output, c.want) && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: the output does not name %q: %v\n%s", c.name, c.want, err, output)
		default:
			t.Logf("%s: %s", c.name, firstLine(err.Error(), c.want))
		}
	}
}

// TestHelmConfigEdgeCheck runs the edge binary's `edge check` on the edge.yaml of each rendering,
// with made-up files where the pod mounts its Secrets, and holds the Deployment to that config:
// every file it names is mounted from a Secret, the listeners are the container's ports, the
// probes reach ops, the grace period covers the preStop sleep and shutdown.grace, the built-in
// Redis wants the password edge reads. Broken values prove each is caught.
func TestHelmConfigEdgeCheck(t *testing.T) {
	for _, v := range helmVariants {
		problems := chartConfigProblems(t, mustRender(t, helmNamespace, v.args...))
		for _, p := range problems {
			t.Errorf("%s: %s", v.name, p)
		}
		if len(problems) == 0 {
			t.Logf("%s: edge check passes, the Deployment agrees with its config", v.name)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a duration edge cannot read", []string{"--set-string", "config.shutdown.grace=soon"}, "shutdown.grace"},
		{"a grace period shorter than the drain", []string{"--set", "preStopSleepSeconds=20"}, "terminationGracePeriodSeconds 45s"},
		{"a file outside the mounts", []string{"--set", "config.internal.secret_file=/etc/edge/keys/internal.key"}, "/etc/edge/keys/internal.key"},
	} {
		problems := chartConfigProblems(t, mustRender(t, helmNamespace, c.args...))
		if i := slices.IndexFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }); i < 0 {
			t.Errorf("%s: no problem names %q: %q", c.name, c.want, problems)
		} else {
			t.Logf("%s: %s", c.name, firstLine(problems[i], c.want))
		}
	}
}

// chartConfigProblems checks one rendering: see TestHelmConfigEdgeCheck.
func chartConfigProblems(t *testing.T, rendered string) []string {
	t.Helper()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	objects := map[string]map[string]any{}
	for _, doc := range yamlDocs(t, rendered) {
		objects[docKey(doc)] = doc
	}
	var deploy map[string]any
	for key, doc := range objects {
		if strings.HasPrefix(key, "Deployment/") {
			deploy = doc
		}
	}
	if deploy == nil {
		t.Fatalf("no Deployment rendered:\n%s", rendered)
	}
	pod, _ := digMap(deploy, "spec", "template", "spec").(map[string]any)
	containers, _ := pod["containers"].([]any)
	container, _ := containers[0].(map[string]any)
	args := toStringList(container["args"])

	// The config: the file --config names, in the ConfigMap mounted as that directory.
	var configPath string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			configPath = v
		}
	}
	secretDirs := map[string]string{} // mount path -> Secret name
	var edgeYAML string
	volumes := map[string]map[string]any{}
	for _, v := range pod["volumes"].([]any) {
		v := v.(map[string]any)
		volumes[v["name"].(string)] = v
	}
	for _, vm := range container["volumeMounts"].([]any) {
		vm := vm.(map[string]any)
		mountPath := vm["mountPath"].(string)
		if vm["subPath"] != nil {
			bad("%s is mounted with subPath: edits would never reach the pod", mountPath)
		}
		vol := volumes[vm["name"].(string)]
		if s, ok := digMap(vol, "secret", "secretName").(string); ok {
			secretDirs[mountPath] = s
		}
		if cm, ok := digMap(vol, "configMap", "name").(string); ok && path.Dir(configPath) == mountPath {
			edgeYAML, _ = digMap(objects["ConfigMap/"+cm], "data", path.Base(configPath)).(string)
		}
	}
	if edgeYAML == "" {
		t.Fatalf("--config=%s: no ConfigMap with that file is mounted there", configPath)
	}

	// edge check, with each file the config names made up under a temporary directory.
	dir := t.TempDir()
	root, _ := repoRoot()
	pki := writeKubePKI(t, t.TempDir()) // a certificate and its key
	files := regexp.MustCompile(`/etc/edge/[A-Za-z0-9._/-]+`).FindAllString(edgeYAML, -1)
	for _, f := range files {
		if _, ok := secretDirs[path.Dir(f)]; !ok {
			bad("the config names %s, which no Secret volume of the edge container mounts", f)
		}
		src := map[string]string{".pub": filepath.Join(root, "examples", "keys", "gitlab-jwt.pub"), "tls.crt": pki.certFile, "tls.key": pki.keyFile}
		content := []byte(strings.Repeat("s", 48))
		for suffix, from := range src {
			if strings.HasSuffix(f, suffix) {
				b, err := os.ReadFile(from)
				if err != nil {
					t.Fatal(err)
				}
				content = b
			}
		}
		local := filepath.Join(dir, strings.TrimPrefix(f, "/etc/edge/"))
		if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	localConfig := filepath.Join(dir, "config", "edge.yaml")
	if err := os.MkdirAll(filepath.Dir(localConfig), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(localConfig, []byte(strings.ReplaceAll(edgeYAML, "/etc/edge/", dir+"/")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), edgeBinaryPath(), "check", "--config", localConfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		bad("edge check: %v\n%s", err, out)
	}

	var cfg struct {
		Listen   map[string]string `yaml:"listen"`
		Shutdown struct {
			Grace string `yaml:"grace"`
		} `yaml:"shutdown"`
		Registry struct {
			Redis struct {
				Addr         string `yaml:"addr"`
				PasswordFile string `yaml:"password_file"`
			} `yaml:"redis"`
		} `yaml:"registry"`
	}
	if err := yaml.Unmarshal([]byte(edgeYAML), &cfg); err != nil {
		t.Fatalf("edge.yaml: %v", err)
	}

	// Listeners and ports, probes, the advertised pod IP.
	ports := map[string]string{} // name -> number
	for _, p := range container["ports"].([]any) {
		p := p.(map[string]any)
		ports[fmt.Sprint(p["name"])] = fmt.Sprint(p["containerPort"])
	}
	for _, l := range []string{"public", "internal", "ops"} {
		host, port, _ := net.SplitHostPort(cfg.Listen[l])
		if host != "" || port != ports[l] {
			bad("listen.%s %q: want the pod's port %s (%s) on every address", l, cfg.Listen[l], l, ports[l])
		}
	}
	for probe, want := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if p, port := digMap(container, probe, "httpGet", "path"), digMap(container, probe, "httpGet", "port"); p != want || port != "ops" {
			bad("%s: %v on %v, want %s on ops", probe, p, port, want)
		}
	}
	want := "--advertise-internal=http://$(POD_IP):" + ports["internal"]
	if !slices.Contains(args, want) {
		bad("args %q lack %s", args, want)
	}
	var podIP bool
	env, _ := container["env"].([]any)
	for _, e := range env {
		podIP = podIP || digMap(e, "name") == "POD_IP" && digMap(e, "valueFrom", "fieldRef", "fieldPath") == "status.podIP"
	}
	if !podIP {
		bad("no env POD_IP from the fieldRef status.podIP")
	}

	// Stopping: the preStop sleep, then shutdown.grace, within the grace period.
	grace, err := time.ParseDuration(cfg.Shutdown.Grace)
	if err != nil {
		grace = 30 * time.Second // edge check has named it; its default
	}
	sleep, _ := digMap(container, "lifecycle", "preStop", "sleep", "seconds").(int)
	termination, _ := pod["terminationGracePeriodSeconds"].(int)
	if need := time.Duration(sleep)*time.Second + grace; time.Duration(termination)*time.Second <= need {
		bad("terminationGracePeriodSeconds %v, want more than the preStop sleep + shutdown.grace = %v", time.Duration(termination)*time.Second, need)
	}

	// The built-in Redis: the Service edge's registry names, the password edge reads.
	if sts, ok := objects["StatefulSet/edge-redis"]; ok {
		host, port, _ := net.SplitHostPort(cfg.Registry.Redis.Addr)
		svc := objects["Service/"+host]
		if svc == nil || digMap(svc, "spec", "ports") == nil || fmt.Sprint(digMap(svc, "spec", "ports").([]any)[0].(map[string]any)["port"]) != port {
			bad("registry.redis.addr %s: no such Service port among the rendered objects", cfg.Registry.Redis.Addr)
		}
		rc := digMap(sts, "spec", "template", "spec", "containers").([]any)[0]
		ref := digMap(digMap(rc, "env").([]any)[0], "valueFrom", "secretKeyRef")
		pf := cfg.Registry.Redis.PasswordFile
		if digMap(ref, "name") != secretDirs[path.Dir(pf)] || digMap(ref, "key") != path.Base(pf) || !slices.Contains(toStringList(digMap(rc, "args")), "--requirepass") {
			bad("the built-in Redis does not --requirepass %v, the key edge reads as %s", ref, pf)
		}
	}
	return problems
}

func toStringList(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// TestHelmMatchesPlainManifests renders the chart with ci/plain-values.yaml as `helm install edge
// -n edge` would and compares it, object by object and field by field, with deploy/kubernetes/
// (edge.yaml, redis.yaml, network-policy.yaml): the same edge.yaml, Deployment, Services,
// PodDisruptionBudget, NetworkPolicies and Redis pod, less the labels only Helm adds. The built-in
// Redis is a StatefulSet where the plain manifest has a Deployment: their pods are compared.
// TestHelmRulesAndDashboards: the chart's PrometheusRule, with the default thresholds, is
// deploy/prometheus/edge-rules.yaml (Prometheus's own {{ }} kept through Helm's); a threshold set
// as a value reaches its rule; the dashboards' ConfigMap carries deploy/grafana's JSON.
func TestHelmRulesAndDashboards(t *testing.T) {
	root, _ := repoRoot()
	read := func(path string) []byte {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var want map[string]any
	if err := yaml.Unmarshal(read("deploy/prometheus/edge-rules.yaml"), &want); err != nil {
		t.Fatal(err)
	}
	find := func(docs []map[string]any, kind, suffix string) map[string]any {
		for _, d := range docs {
			name, _ := d["metadata"].(map[string]any)["name"].(string)
			if d["kind"] == kind && strings.HasSuffix(name, suffix) {
				return d
			}
		}
		t.Fatalf("no %s *%s in the rendering", kind, suffix)
		return nil
	}
	docs := yamlDocs(t, mustRender(t, helmNamespace, "-f", "ci/full-values.yaml"))
	if got := find(docs, "PrometheusRule", "")["spec"]; !reflect.DeepEqual(got, want) {
		t.Errorf("the PrometheusRule's spec is not deploy/prometheus/edge-rules.yaml:\n%s", compactYAML(got))
	}
	cm := find(docs, "ConfigMap", "-dashboards")
	if cm["metadata"].(map[string]any)["labels"].(map[string]any)["grafana_dashboard"] != "1" {
		t.Errorf("the dashboards' ConfigMap lacks the sidecar's label: %v", cm["metadata"])
	}
	for _, name := range []string{"edge-overview.json", "edge-cell.json"} {
		got, _ := cm["data"].(map[string]any)[name].(string)
		if got != strings.TrimSuffix(string(read("deploy/grafana/"+name)), "\n") {
			t.Errorf("the ConfigMap's %s is not deploy/grafana/%s", name, name)
		}
	}
	docs = yamlDocs(t, mustRender(t, helmNamespace, "--set", "prometheusRule.enabled=true", "--set", "prometheusRule.thresholds.errorRatio=0.2"))
	rendered := compactYAML(find(docs, "PrometheusRule", "")["spec"])
	if !strings.Contains(rendered, "> 0.2 and") || strings.Contains(rendered, "> 0.05 and") {
		t.Errorf("errorRatio=0.2 did not reach EdgeErrorsHigh:\n%s", rendered)
	}
}

func TestHelmMatchesPlainManifests(t *testing.T) {
	root, _ := repoRoot()
	var plain []map[string]any
	for _, f := range []string{"edge.yaml", "redis.yaml", "network-policy.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "deploy", "kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, yamlDocs(t, string(raw))...)
	}
	diffs := chartVsPlain(t, mustRender(t, "edge", "-f", "ci/plain-values.yaml"), plain)
	for _, d := range diffs {
		t.Errorf("the chart (ci/plain-values.yaml) and deploy/kubernetes/ differ: %s", d)
	}
	if len(diffs) == 0 {
		t.Logf("%d objects alike", len(plain))
	}
	// Negative control: one value away from the plain manifests.
	diffs = chartVsPlain(t, mustRender(t, "edge", "-f", "ci/plain-values.yaml", "--set", "preStopSleepSeconds=6"), plain)
	if want := "Deployment/edge: spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds"; len(diffs) != 1 || !strings.HasPrefix(diffs[0], want) {
		t.Errorf("preStopSleepSeconds=6: differences %q, want one, %s", diffs, want)
	} else {
		t.Logf("preStopSleepSeconds=6: %s", diffs[0])
	}
}

// helmOnlyLabels are the labels the chart adds to every object and selector.
var helmOnlyLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart"}

// chartVsPlain lists the differences between a rendering and the plain objects.
func chartVsPlain(t *testing.T, rendered string, plain []map[string]any) []string {
	t.Helper()
	chart := map[string]map[string]any{}
	for _, doc := range yamlDocs(t, rendered) {
		dropKeys(doc, helmOnlyLabels)
		if doc["kind"] == "StatefulSet" { // compared as the plain Deployment
			doc["kind"] = "Deployment"
			spec := doc["spec"].(map[string]any)
			delete(spec, "serviceName")
		}
		decodeEdgeYAML(t, doc)
		chart[docKey(doc)] = doc
	}
	var diffs []string
	seen := map[string]bool{}
	for _, doc := range plain {
		key := docKey(doc)
		seen[key] = true
		c, ok := chart[key]
		if !ok {
			diffs = append(diffs, key+": not rendered by the chart")
			continue
		}
		decodeEdgeYAML(t, doc)
		if key == "Deployment/edge-redis" { // the strategies of a Deployment and a StatefulSet differ
			delete(doc["spec"].(map[string]any), "strategy")
		}
		for _, d := range diffValues("", doc, c) {
			diffs = append(diffs, key+": "+d)
		}
	}
	for key := range chart {
		if !seen[key] {
			diffs = append(diffs, key+": not in deploy/kubernetes/")
		}
	}
	sort.Strings(diffs)
	return diffs
}

// decodeEdgeYAML replaces a ConfigMap's edge.yaml text by its decoded value: comments and the
// order of keys do not count.
func decodeEdgeYAML(t *testing.T, doc map[string]any) {
	t.Helper()
	data, _ := doc["data"].(map[string]any)
	if s, ok := data["edge.yaml"].(string); ok {
		var v any
		if err := yaml.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: edge.yaml: %v", docKey(doc), err)
		}
		data["edge.yaml"] = v
	}
}

// dropKeys deletes keys from every map within v.
func dropKeys(v any, keys []string) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range keys {
			delete(v, k)
		}
		for _, x := range v {
			dropKeys(x, keys)
		}
	case []any:
		for _, x := range v {
			dropKeys(x, keys)
		}
	}
}

// diffValues lists where want (plain) and got (chart) differ, as paths with both values.
func diffValues(at string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		var out []string
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if at != "" {
				p = at + "." + k
			}
			out = append(out, diffValues(p, wm[k], gm[k])...)
		}
		return out
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok && len(wl) == len(gl) {
		var out []string
		for i := range wl {
			out = append(out, diffValues(at+"["+strconv.Itoa(i)+"]", wl[i], gl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(want, got) {
		return nil
	}
	return []string{fmt.Sprintf("%s: deploy/kubernetes/ has %s, the chart %s", at, compactYAML(want), compactYAML(got))}
}

func compactYAML(v any) string {
	if v == nil {
		return "nothing"
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// prometheusRuleCRD is the part of the Prometheus Operator's PrometheusRule CRD
// (monitoring.coreos.com/v1) that the chart uses, with the upstream schema's types, required
// fields and duration pattern.
const prometheusRuleCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule, categories: [prometheus-operator], shortNames: [promrule]}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          required: [spec]
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              properties:
                groups:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [name]
                  items:
                    type: object
                    required: [name]
                    properties:
                      name: {type: string, minLength: 1}
                      interval: {type: string, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
                      rules:
                        type: array
                        items:
                          type: object
                          required: [expr]
                          properties:
                            record: {type: string}
                            alert: {type: string}
                            expr: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
                            for: {type: string, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
                            keep_firing_for: {type: string, minLength: 1, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
                            labels: {type: object, additionalProperties: {type: string}}
                            annotations: {type: object, additionalProperties: {type: string}}
`

// serviceMonitorCRD is the part of the Prometheus Operator's ServiceMonitor CRD
// (monitoring.coreos.com/v1) that the chart uses, with the upstream schema's types, its required
// selector and its duration pattern. Without preserve-unknown-fields, a misspelt field is refused
// by --validate=strict as in a cluster with the full CRD.
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor, categories: [prometheus-operator], shortNames: [smon]}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          required: [spec]
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              required: [selector]
              properties:
                jobLabel: {type: string}
                selector:
                  type: object
                  x-kubernetes-map-type: atomic
                  properties:
                    matchLabels: {type: object, additionalProperties: {type: string}}
                    matchExpressions:
                      type: array
                      items:
                        type: object
                        required: [key, operator]
                        properties:
                          key: {type: string}
                          operator: {type: string}
                          values: {type: array, items: {type: string}}
                namespaceSelector:
                  type: object
                  properties:
                    any: {type: boolean}
                    matchNames: {type: array, items: {type: string}}
                endpoints:
                  type: array
                  items:
                    type: object
                    properties:
                      port: {type: string}
                      targetPort: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
                      path: {type: string}
                      scheme: {type: string, enum: [http, https, HTTP, HTTPS]}
                      interval: {type: string, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
                      scrapeTimeout: {type: string, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
                      honorLabels: {type: boolean}
`
