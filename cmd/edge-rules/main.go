// Command edge-rules writes edge's alert rules: deploy/prometheus/edge-rules.yaml for a plain
// Prometheus, and the Helm chart's PrometheusRule template, whose thresholds are values
// (make rules).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "deploy/prometheus", "the directory of edge-rules.yaml")
	chart := flag.String("chart", "deploy/helm/edge", "the Helm chart whose templates/prometheusrule.yaml is written")
	flag.Parse()
	if err := write(*out, *chart); err != nil {
		fmt.Fprintln(os.Stderr, "edge-rules:", err)
		os.Exit(1)
	}
}

func write(out, chart string) error {
	if err := os.WriteFile(filepath.Join(out, "edge-rules.yaml"), []byte(rulesFile()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(chart, "templates", "prometheusrule.yaml"), []byte(chartTemplate()), 0o644)
}
