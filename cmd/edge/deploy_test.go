package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/server"
)

// deployUID is the Dockerfile's numeric USER, which every edge container must run as.
const deployUID = 65532

// TestDeployDockerfile holds the Dockerfile to what the manifests assume: a static binary built
// without cgo, a static final image without a shell, a numeric non-root user (Kubernetes'
// runAsNonRoot cannot check a user name), edge as the entrypoint, its ports exposed.
func TestDeployDockerfile(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// Join continued lines, drop comments; split into stages.
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	type stage struct {
		from string
		ins  [][2]string // instruction, arguments
	}
	var stages []stage
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ins, args, _ := strings.Cut(line, " ")
		ins, args = strings.ToUpper(ins), strings.TrimSpace(args)
		if ins == "FROM" {
			var image string
			for _, f := range strings.Fields(args) {
				if !strings.HasPrefix(f, "--") {
					image = f
					break
				}
			}
			stages = append(stages, stage{from: image})
			continue
		}
		if len(stages) == 0 {
			if ins != "ARG" {
				t.Fatalf("Dockerfile: %s before the first FROM", ins)
			}
			continue
		}
		s := &stages[len(stages)-1]
		s.ins = append(s.ins, [2]string{ins, args})
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a final one", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(build.from, "golang:1.26") {
		t.Errorf("build stage FROM %s, want golang:1.26-*", build.from)
	}
	var cgoOff bool
	for _, in := range build.ins {
		if in[0] == "RUN" && strings.Contains(in[1], "go build") {
			cgoOff = strings.Contains(in[1], "CGO_ENABLED=0")
		}
	}
	if !cgoOff {
		t.Error("the go build RUN does not set CGO_ENABLED=0: the final image has no libc")
	}
	if !strings.Contains(final.from, "distroless/static") && final.from != "scratch" {
		t.Errorf("final stage FROM %s, want distroless/static or scratch", final.from)
	}
	var user, entrypoint string
	var exposed []string
	for _, in := range final.ins {
		switch in[0] {
		case "USER":
			user = in[1]
		case "ENTRYPOINT":
			entrypoint = in[1]
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in[1])...)
		case "RUN":
			t.Errorf("final stage RUN %s: the static image has no shell", in[1])
		}
	}
	uid, gid, _ := strings.Cut(user, ":")
	for what, id := range map[string]string{"user": uid, "group": gid} {
		n, err := strconv.Atoi(id)
		if err != nil || n == 0 {
			t.Errorf("USER %q: the %s must be numeric and not 0", user, what)
		}
	}
	if uid != strconv.Itoa(deployUID) {
		t.Errorf("USER %q, the manifests run as %d", user, deployUID)
	}
	if entrypoint != `["/usr/local/bin/edge"]` {
		t.Errorf("ENTRYPOINT %s", entrypoint)
	}
	for _, port := range []string{"8080", "8081", "9090"} {
		if !slices.Contains(exposed, port) {
			t.Errorf("EXPOSE %v lacks %s", exposed, port)
		}
	}
}

// deployManifest is one YAML document of a file under deploy/.
type deployManifest struct {
	file string // relative to deploy/
	doc  map[string]any
}

func (m deployManifest) kind() string { s, _ := m.doc["kind"].(string); return s }
func (m deployManifest) name() string { s, _ := dig(nil, m.doc, "metadata", "name").(string); return s }
func (m deployManifest) namespace() string {
	s, _ := dig(nil, m.doc, "metadata", "namespace").(string)
	return s
}

// loadDeployManifests reads every *.yaml under deploy/ but the Helm chart's (deploy/helm: templates,
// which test/integration/helm_test.go renders and holds to these manifests).
func loadDeployManifests(t *testing.T) []deployManifest {
	t.Helper()
	var out []deployManifest
	root := "../../deploy"
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p == filepath.Join(root, "helm") {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if doc != nil {
				out = append(out, deployManifest{file: rel, doc: doc})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeployManifests holds every manifest under deploy/ that runs edge to the binary: each
// ConfigMap's edge.yaml passes edge check with the files its pod mounts, every file it names is
// mounted (whole directories, so that edits arrive), the args are edge's flags, the probes reach
// the ops listener, the pod gets enough time to drain, runs as the image's non-root user on a
// read-only root, and has Services, a PodDisruptionBudget and (with a registry) its Redis.
func TestDeployManifests(t *testing.T) {
	all := loadDeployManifests(t)
	var checked int
	for _, cm := range all {
		edgeYAML, ok := dig(nil, cm.doc, "data", "edge.yaml").(string)
		if cm.kind() != "ConfigMap" || !ok {
			continue
		}
		checked++
		t.Run(cm.file+"/"+cm.name(), func(t *testing.T) {
			checkDeployedEdge(t, all, cm, edgeYAML)
		})
	}
	if checked < 2 {
		t.Fatalf("%d ConfigMaps with an edge.yaml under deploy/, want the main variant and the sidecar", checked)
	}
}

func checkDeployedEdge(t *testing.T, all []deployManifest, cm deployManifest, edgeYAML string) {
	ns := cm.namespace()
	if ns == "" {
		t.Errorf("ConfigMap %s has no namespace", cm.name())
	}
	inNS := func(kind string) []deployManifest {
		var out []deployManifest
		for _, m := range all {
			if m.kind() == kind && m.namespace() == ns {
				out = append(out, m)
			}
		}
		return out
	}

	// The Deployment that mounts this ConfigMap, and its container that does.
	var deploy deployManifest
	var pod, container map[string]any
	var configDir string
	for _, d := range inNS("Deployment") {
		p := dig(t, d.doc, "spec", "template", "spec").(map[string]any)
		vols := deployVolumes(p)
		for _, c := range p["containers"].([]any) {
			c := c.(map[string]any)
			for _, vm := range deployMounts(c) {
				if v := vols[vm.volume]; v.kind == "configMap" && v.name == cm.name() {
					deploy, pod, container, configDir = d, p, c, vm.path
				}
			}
		}
	}
	if container == nil {
		t.Fatalf("no Deployment in namespace %q mounts ConfigMap %s", ns, cm.name())
	}
	if container["name"] != "edge" {
		t.Errorf("the container that mounts %s is %v, want edge", cm.name(), container["name"])
	}
	if replicas, _ := dig(t, deploy.doc, "spec", "replicas").(int); replicas < 2 {
		t.Errorf("Deployment %s: %d replicas, want at least 2", deploy.name(), replicas)
	}

	// Every file the config names is in a mounted ConfigMap or Secret, mounted as a directory,
	// holding that key when the Secret is among the manifests (example-secrets/).
	vols := deployVolumes(pod)
	mounts := deployMounts(container)
	secretFile := regexp.MustCompile(`/etc/edge/[A-Za-z0-9._/-]+`)
	files := secretFile.FindAllString(edgeYAML, -1)
	secretTypes := map[string]string{} // path -> the Secret's type
	for _, f := range files {
		var found bool
		for _, vm := range mounts {
			if path.Dir(f) != strings.TrimSuffix(vm.path, "/") {
				continue
			}
			found = true
			if vm.subPath != "" {
				t.Errorf("%s is mounted with subPath: edits would never reach the pod", vm.path)
			}
			v := vols[vm.volume]
			if v.kind != "secret" && v.kind != "configMap" {
				t.Errorf("%s comes from a %s volume", f, v.kind)
				continue
			}
			for _, m := range inNS(map[string]string{"secret": "Secret", "configMap": "ConfigMap"}[v.kind]) {
				if m.name() != v.name {
					continue
				}
				if dig(nil, m.doc, "data", path.Base(f)) == nil && dig(nil, m.doc, "stringData", path.Base(f)) == nil {
					t.Errorf("%s: %s %s has no key %s", m.file, m.kind(), v.name, path.Base(f))
				}
				secretTypes[f], _ = m.doc["type"].(string)
			}
		}
		if !found {
			t.Errorf("the config names %s, which no volume of container %s mounts", f, container["name"])
		}
	}

	// edge check, with the mounted files made up in a temporary directory.
	dir := t.TempDir()
	certPEM, keyPEM := deployTLSPair(t)
	pub, err := os.ReadFile("../../examples/keys/gitlab-jwt.pub")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		local := filepath.Join(dir, strings.TrimPrefix(f, "/etc/edge/"))
		if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
			t.Fatal(err)
		}
		content := strings.Repeat("s", 48)
		switch {
		case strings.HasSuffix(f, ".pub"):
			content = string(pub)
		case path.Base(f) == "tls.crt":
			content = certPEM
		case path.Base(f) == "tls.key":
			content = keyPEM
		}
		writeFile(t, local, content)
	}
	args := toStrings(container["args"])
	configPath := path.Join(configDir, "edge.yaml")
	localConfig := filepath.Join(dir, strings.TrimPrefix(configPath, "/etc/edge/"))
	if err := os.MkdirAll(filepath.Dir(localConfig), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, localConfig, strings.ReplaceAll(edgeYAML, "/etc/edge/", dir+"/"))
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"check", "--config", localConfig}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("edge check of ConfigMap %s: %v\n%s", cm.name(), err, stderr.String())
	}
	cfg, err := server.LoadConfig(localConfig)
	if err != nil {
		t.Fatal(err)
	}

	// Args: edge's flags, the mounted config, the pod IP advertised when edges talk to each other.
	wantArgs := []string{"serve", "--config=" + configPath}
	if cfg.Registry != nil {
		_, internalPort, _ := net.SplitHostPort(cfg.Listen.Internal)
		wantArgs = append(wantArgs, "--advertise-internal=http://$(POD_IP):"+internalPort)
		env, _ := container["env"].([]any)
		var podIP bool
		for _, e := range env {
			e := e.(map[string]any)
			podIP = podIP || e["name"] == "POD_IP" && dig(nil, e, "valueFrom", "fieldRef", "fieldPath") == "status.podIP"
		}
		if !podIP {
			t.Error("no env POD_IP from the fieldRef status.podIP")
		}
	}
	for _, want := range wantArgs {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	var helpOut, helpErr bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, strings.NewReader(""), &helpOut, &helpErr); !errors.Is(err, cli.ErrHelp) {
		t.Fatalf("edge serve --help: %v", err)
	}
	for _, a := range args[1:] {
		flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.Contains(helpErr.String(), "-"+flag+" ") && !strings.Contains(helpErr.String(), "-"+flag+"\n") {
			t.Errorf("arg %q: edge serve has no such flag", a)
		}
	}

	// Ports: each listener is a container port; probes reach the ops one.
	ports := map[string]string{} // container port name and number -> number
	for _, p := range container["ports"].([]any) {
		p := p.(map[string]any)
		n := strconv.Itoa(p["containerPort"].(int))
		ports[n] = n
		if name, ok := p["name"].(string); ok {
			ports[name] = n
		}
	}
	listenPort := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
	public, ops, internal := listenPort(cfg.Listen.Public), listenPort(cfg.Listen.Ops), listenPort(cfg.Listen.Internal)
	for what, p := range map[string]string{"public": public, "ops": ops, "internal": internal} {
		if p != "" && ports[p] == "" {
			t.Errorf("listen.%s port %s is not a container port", what, p)
		}
	}
	if host, _, _ := net.SplitHostPort(cfg.Listen.Ops); host != "" {
		t.Errorf("listen.ops %q: the kubelet probes the pod IP", cfg.Listen.Ops)
	}
	for probe, want := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if got := dig(t, container, probe, "httpGet", "path"); got != want {
			t.Errorf("%s path: got %v, want %s", probe, got, want)
		}
		if got := ports[fmt.Sprint(dig(t, container, probe, "httpGet", "port"))]; got != ops {
			t.Errorf("%s port: got %v, want the ops port %s", probe, got, ops)
		}
	}

	// Stopping: the kubelet's preStop sleep (no shell in the image), then shutdown.grace.
	seconds, ok := dig(t, container, "lifecycle", "preStop", "sleep", "seconds").(int)
	if !ok || seconds < 1 {
		t.Errorf("lifecycle.preStop.sleep.seconds %v, want some", seconds)
	}
	preStop := time.Duration(seconds) * time.Second
	termination := time.Duration(pod["terminationGracePeriodSeconds"].(int)) * time.Second
	if need := preStop + cfg.Shutdown.Grace.Duration; termination <= need {
		t.Errorf("terminationGracePeriodSeconds %v, want more than preStop + shutdown.grace = %v", termination, need)
	}
	// An app in front of which edge runs (the sidecar variant) keeps serving while edge drains.
	for _, c := range pod["containers"].([]any) {
		for _, a := range toStrings(dig(nil, c, "args")) {
			if v, ok := strings.CutPrefix(a, "--shutdown-grace-period="); ok {
				n, _ := strconv.Atoi(v)
				if need := preStop + cfg.Shutdown.Grace.Duration; time.Duration(n)*time.Second <= need {
					t.Errorf("container %v: %s, want more than edge's preStop + shutdown.grace = %v", dig(nil, c, "name"), a, need)
				}
			}
		}
	}

	// Security: the container's settings, or the pod's where the container has none.
	sec := func(key string) any {
		if v := dig(nil, container, "securityContext", key); v != nil {
			return v
		}
		return dig(nil, pod, "securityContext", key)
	}
	for key, want := range map[string]any{"runAsNonRoot": true, "runAsUser": deployUID, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true} {
		if got := sec(key); got != want {
			t.Errorf("securityContext.%s: got %v, want %v", key, got, want)
		}
	}
	if drop, _ := dig(nil, container, "securityContext", "capabilities", "drop").([]any); !slices.Contains(drop, any("ALL")) {
		t.Errorf("securityContext.capabilities.drop %v, want ALL", drop)
	}
	if add := dig(nil, container, "securityContext", "capabilities", "add"); add != nil {
		t.Errorf("securityContext.capabilities.add %v: edge needs none", add)
	}
	if got := dig(nil, sec("seccompProfile"), "type"); got != "RuntimeDefault" {
		t.Errorf("seccompProfile.type %v, want RuntimeDefault", got)
	}
	for _, key := range [][]string{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "memory"}} {
		if dig(nil, container, append([]string{"resources"}, key...)...) == nil {
			t.Errorf("no resources.%s", strings.Join(key, "."))
		}
	}

	// TLS: the static certificate from a kubernetes.io/tls Secret; no ACME here.
	if cfg.TLS != nil {
		if cfg.TLS.ACME != nil {
			t.Error("tls.acme in a manifest")
		}
		if s := cfg.TLS.Static; s != nil {
			for _, f := range files {
				if b := path.Base(f); (b == "tls.crt" || b == "tls.key") && secretTypes[f] != "" && secretTypes[f] != "kubernetes.io/tls" {
					t.Errorf("%s comes from a Secret of type %s, want kubernetes.io/tls", f, secretTypes[f])
				}
			}
		}
	}

	// Services: one sends the public port; none outside the cluster sends internal or ops.
	labels := dig(t, deploy.doc, "spec", "template", "metadata", "labels").(map[string]any)
	selects := func(sel any) bool { m, _ := sel.(map[string]any); return deploySubset(m, labels) }
	var publicServed bool
	for _, s := range inNS("Service") {
		if !selects(dig(t, s.doc, "spec", "selector")) {
			continue
		}
		typ, _ := dig(t, s.doc, "spec", "type").(string)
		for _, p := range dig(t, s.doc, "spec", "ports").([]any) {
			target := ports[fmt.Sprint(dig(t, p, "targetPort"))]
			publicServed = publicServed || target == public
			if (typ == "LoadBalancer" || typ == "NodePort") && target != "" && (target == internal || target == ops) {
				t.Errorf("Service %s (%s) exposes port %s outside the cluster", s.name(), typ, target)
			}
		}
	}
	if !publicServed {
		t.Errorf("no Service in %q sends the public port %s", ns, public)
	}
	var pdb bool
	for _, p := range inNS("PodDisruptionBudget") {
		sel := dig(t, p.doc, "spec", "selector", "matchLabels")
		pdb = pdb || selects(sel) && (dig(t, p.doc, "spec", "minAvailable") != nil || dig(t, p.doc, "spec", "maxUnavailable") != nil)
	}
	if !pdb {
		t.Errorf("no PodDisruptionBudget in %q for Deployment %s", ns, deploy.name())
	}

	// The registry's Redis: a Service of the manifests, with the password edge reads.
	if r := cfg.Registry; r != nil {
		host, port, _ := net.SplitHostPort(r.Redis.Addr)
		var svc *deployManifest
		for _, s := range inNS("Service") {
			if s.name() == host {
				svc = &s
			}
		}
		if svc == nil {
			t.Fatalf("registry.redis.addr %s: no Service %s in %q", r.Redis.Addr, host, ns)
		}
		var redis map[string]any
		for _, d := range inNS("Deployment") {
			sel, _ := dig(t, svc.doc, "spec", "selector").(map[string]any)
			if podLabels, _ := dig(t, d.doc, "spec", "template", "metadata", "labels").(map[string]any); deploySubset(sel, podLabels) {
				redis = dig(t, d.doc, "spec", "template", "spec").(map[string]any)
			}
		}
		if redis == nil {
			t.Fatalf("no Deployment behind Service %s", host)
		}
		var servesPort bool
		for _, p := range dig(t, svc.doc, "spec", "ports").([]any) {
			servesPort = servesPort || fmt.Sprint(dig(t, p, "port")) == port
		}
		if !servesPort {
			t.Errorf("Service %s has no port %s", host, port)
		}
		if pf := r.Redis.PasswordFile; pf != "" {
			// The key edge reads (volume secret name, file name) must be the one redis gets.
			rel := strings.TrimPrefix(pf, dir+"/")
			var secretName string
			for _, vm := range mounts {
				if path.Dir("/etc/edge/"+rel) == strings.TrimSuffix(vm.path, "/") {
					secretName = vols[vm.volume].name
				}
			}
			rc := redis["containers"].([]any)[0].(map[string]any)
			var same bool
			for _, e := range rc["env"].([]any) {
				ref := dig(nil, e, "valueFrom", "secretKeyRef")
				same = same || dig(nil, ref, "name") == secretName && dig(nil, ref, "key") == path.Base(rel) &&
					slices.Contains(toStrings(rc["args"]), "$("+dig(nil, e, "name").(string)+")")
			}
			if !same || !slices.Contains(toStrings(rc["args"]), "--requirepass") {
				t.Errorf("redis does not --requirepass the key %s/%s edge reads as registry.redis.password_file", secretName, path.Base(rel))
			}
		}
	}
}

// TestDeployExampleSecretsFailClosed: an edge given the placeholder Secrets of
// deploy/kubernetes/example-secrets/ refuses to start, naming each file, instead of running with
// keys anyone can read there.
func TestDeployExampleSecretsFailClosed(t *testing.T) {
	all := loadDeployManifests(t)
	var n int
	for _, cm := range all {
		edgeYAML, ok := dig(nil, cm.doc, "data", "edge.yaml").(string)
		if cm.kind() != "ConfigMap" || !ok {
			continue
		}
		// Every mounted file gets the placeholder of the example Secret with that key.
		placeholders := map[string]string{}
		for _, s := range all {
			if s.kind() == "Secret" && s.namespace() == cm.namespace() && strings.HasPrefix(s.file, filepath.Join("kubernetes", "example-secrets")) {
				data, _ := s.doc["stringData"].(map[string]any)
				for k, v := range data {
					placeholders[k] = fmt.Sprint(v)
				}
			}
		}
		dir := t.TempDir()
		fileRef := regexp.MustCompile(`/etc/edge/[A-Za-z0-9._/-]+`)
		var wantLines []int // the config lines that must be refused
		for i, line := range strings.Split(edgeYAML, "\n") {
			for _, f := range fileRef.FindAllString(line, -1) {
				v, ok := placeholders[path.Base(f)]
				if !ok {
					t.Errorf("%s: no example Secret in %q has the key %s", cm.file, cm.namespace(), path.Base(f))
					continue
				}
				local := filepath.Join(dir, strings.TrimPrefix(f, "/etc/edge/"))
				if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, local, v)
				// Redis takes any password: that line passes, the others stop edge.
				if path.Base(f) != "redis.password" && !slices.Contains(wantLines, i+1) {
					wantLines = append(wantLines, i+1)
				}
			}
		}
		conf := filepath.Join(dir, "edge.yaml")
		writeFile(t, conf, strings.ReplaceAll(edgeYAML, "/etc/edge/", dir+"/"))
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"check", "--config", conf}, strings.NewReader(""), &stdout, &stderr)
		if err == nil {
			t.Errorf("%s: edge check passed with the placeholder Secrets", cm.file)
			continue
		}
		for _, line := range wantLines {
			if !strings.Contains(err.Error(), fmt.Sprintf("edge.yaml:%d:", line)) {
				t.Errorf("%s: line %d of its edge.yaml (%s) is not refused with a placeholder:\n%v", cm.file, line, strings.TrimSpace(strings.Split(edgeYAML, "\n")[line-1]), err)
			}
		}
		t.Logf("%s with the placeholders: %v", cm.file, err)
		n++
	}
	if n < 2 {
		t.Fatalf("%d configs checked", n)
	}
}

type deployVolume struct{ kind, name string }

// deployVolumes maps a pod's volume names to their source: configMap or secret and its name.
func deployVolumes(pod map[string]any) map[string]deployVolume {
	out := map[string]deployVolume{}
	vols, _ := pod["volumes"].([]any)
	for _, v := range vols {
		v := v.(map[string]any)
		name := v["name"].(string)
		switch {
		case v["configMap"] != nil:
			out[name] = deployVolume{"configMap", dig(nil, v, "configMap", "name").(string)}
		case v["secret"] != nil:
			out[name] = deployVolume{"secret", dig(nil, v, "secret", "secretName").(string)}
		default:
			for k := range v {
				if k != "name" {
					out[name] = deployVolume{kind: k}
				}
			}
		}
	}
	return out
}

type deployMount struct{ volume, path, subPath string }

func deployMounts(container map[string]any) []deployMount {
	var out []deployMount
	vms, _ := container["volumeMounts"].([]any)
	for _, vm := range vms {
		vm := vm.(map[string]any)
		sub, _ := vm["subPath"].(string)
		out = append(out, deployMount{vm["name"].(string), vm["mountPath"].(string), sub})
	}
	return out
}

// deploySubset tells whether every label of sel is in labels.
func deploySubset(sel, labels map[string]any) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// deployTLSPair makes a self-signed certificate and its key, PEM, for tls.static.
func deployTLSPair(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "edge.example.com"},
		DNSNames:     []string{"edge.example.com"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
}

// dig follows keys through nested maps; nil when one is missing. With t, a missing key fails the
// test.
func dig(t *testing.T, v any, keys ...string) any {
	if t != nil {
		t.Helper()
	}
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			if t != nil {
				t.Fatalf("manifest: no %q (in %v)", k, keys)
			}
			return nil
		}
		v = m[k]
	}
	return v
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}
