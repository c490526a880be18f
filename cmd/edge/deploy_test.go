package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/config"
)

// TestKubernetesManifests holds deploy/kubernetes/edge.yaml to the binary: its edge config is
// valid, its args are edge's flags, its probes reach the ops listener, and the pod gets enough
// time to drain.
func TestKubernetesManifests(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/kubernetes/edge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("manifest YAML: %v", err)
		}
		docs[doc["kind"].(string)] = doc
	}
	for _, kind := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget"} {
		if docs[kind] == nil {
			t.Fatalf("no %s in the manifests", kind)
		}
	}

	// The config, with the secrets the Secret would mount written to a temporary directory.
	edgeYAML := dig(t, docs["ConfigMap"], "data", "edge.yaml").(string)
	dir := t.TempDir()
	for _, name := range []string{"internal.key", "agent.key", "gitlab-api.key"} {
		writeFile(t, filepath.Join(dir, name), strings.Repeat("s", 48))
	}
	pub, err := os.ReadFile("../../examples/keys/gitlab-jwt.pub")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "gitlab-jwt.pub"), string(pub))
	cfg, err := config.Parse([]byte(strings.ReplaceAll(edgeYAML, "/etc/edge/secrets/", dir+"/")), "edge.yaml", dir)
	if err != nil {
		t.Fatalf("the ConfigMap's edge.yaml: %v", err)
	}

	pod := dig(t, docs["Deployment"], "spec", "template", "spec").(map[string]any)
	container := pod["containers"].([]any)[0].(map[string]any)
	args := strings.Join(toStrings(container["args"]), " ")
	for _, want := range []string{"serve", "--config=/etc/edge/config/edge.yaml", "--advertise-internal=http://$(POD_IP):8081"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"serve", "--help"}, strings.NewReader(""), &stdout, &stderr); !errors.Is(err, errHelp) || !strings.Contains(stderr.String(), "-advertise-internal") {
		t.Errorf("edge serve has no --advertise-internal flag: %v %s", err, stderr.String())
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if got := dig(t, container, probe, "httpGet", "path"); got != path {
			t.Errorf("%s path: got %v, want %s", probe, got, path)
		}
	}
	if !strings.HasSuffix(cfg.Listen.Ops, ":9090") || !strings.Contains(string(raw), "{name: ops, containerPort: 9090}") {
		t.Errorf("ops listener %q and the ops container port disagree", cfg.Listen.Ops)
	}
	preStop := time.Duration(dig(t, container, "lifecycle", "preStop", "sleep", "seconds").(int)) * time.Second
	termination := time.Duration(pod["terminationGracePeriodSeconds"].(int)) * time.Second
	if need := preStop + cfg.Shutdown.Grace.Duration; termination <= need {
		t.Errorf("terminationGracePeriodSeconds %v, want more than preStop + shutdown.grace = %v", termination, need)
	}
}

func dig(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("manifest: no %q (in %v)", k, keys)
		}
		v = m[k]
	}
	return v
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestAdvertiseInternalFlagOverridesConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Listen.AdvertiseInternal = "http://from-file:8081"
	overrides{}.apply(cfg)
	if cfg.Listen.AdvertiseInternal != "http://from-file:8081" {
		t.Errorf("no flag: got %q", cfg.Listen.AdvertiseInternal)
	}
	overrides{advertiseInternal: "http://10.1.2.3:8081"}.apply(cfg)
	if cfg.Listen.AdvertiseInternal != "http://10.1.2.3:8081" {
		t.Errorf("flag: got %q", cfg.Listen.AdvertiseInternal)
	}
}
