package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const root = "../.."

// TestCheckedInIsGenerated: the rules file and the chart's template are what make rules writes.
func TestCheckedInIsGenerated(t *testing.T) {
	for path, want := range map[string]string{
		"deploy/prometheus/edge-rules.yaml":              rulesFile(),
		"deploy/helm/edge/templates/prometheusrule.yaml": chartTemplate(),
	} {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s differs from what cmd/edge-rules writes: run make rules", path)
		}
	}
}

// TestThresholdsAreTheChartsValues: every threshold an alert names exists, every one is used, and
// the chart's values say the same defaults.
func TestThresholdsAreTheChartsValues(t *testing.T) {
	used := map[string]bool{}
	for _, a := range alerts() {
		for _, m := range placeholder().FindAllStringSubmatch(a.expr+a.forDur+a.description, -1) {
			used[m[1]] = true
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy/helm/edge/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		PrometheusRule struct {
			Thresholds map[string]any `yaml:"thresholds"`
		} `yaml:"prometheusRule"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	chart := values.PrometheusRule.Thresholds
	for _, th := range thresholds() {
		if !used[th.name] {
			t.Errorf("threshold %s is named by no alert", th.name)
		}
		delete(used, th.name)
		if v, ok := chart[th.name]; !ok || fmt.Sprint(v) != th.value {
			t.Errorf("values.yaml prometheusRule.thresholds.%s = %v, want %s", th.name, v, th.value)
		}
		delete(chart, th.name)
	}
	for name := range used {
		t.Errorf("an alert names ${%s}, which is no threshold", name)
	}
	for name := range chart {
		t.Errorf("values.yaml has threshold %s, which no alert reads", name)
	}
}

// TestEveryAlertHasARunbook: docs/runbooks.md has a section per alert, saying what it means, how
// to confirm it and what to do; no section for an alert that does not exist.
func TestEveryAlertHasARunbook(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs/runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	parts := regexp.MustCompile(`(?m)^## `).Split(string(b), -1)
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, "\n")
		sections[name] = body
	}
	for _, a := range alerts() {
		body, ok := sections[a.name]
		if !ok {
			t.Errorf("docs/runbooks.md has no section ## %s", a.name)
			continue
		}
		for _, part := range []string{"**Means.**", "**Confirm.**", "**Do.**"} {
			if !strings.Contains(body, part) {
				t.Errorf("runbook %s says nothing under %s", a.name, part)
			}
		}
		delete(sections, a.name)
	}
	for name := range sections {
		t.Errorf("docs/runbooks.md has a section %q for no alert", name)
	}
}

// TestPromtool: Prometheus's own checker takes the rules, and each alert's unit test (it fires on
// a series of trouble with its annotations as written, and stays quiet on a healthy one) passes.
// make test installs promtool (Debian's prometheus package).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: ./scripts/deps.sh promtool=prometheus installs it (make test does)")
	}
	dir := filepath.Join(root, "deploy/prometheus")
	for _, args := range [][]string{{"check", "rules", "edge-rules.yaml"}, {"test", "rules", "edge-rules_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	tests, err := os.ReadFile(filepath.Join(dir, "edge-rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts() {
		if !strings.Contains(string(tests), "alertname: "+a.name+"\n") {
			t.Errorf("edge-rules_test.yaml does not test %s", a.name)
		}
	}
}
