package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exported is every metric edge exports that a dashboard may read (histograms by their base name).
const exported = `
	edge_route_requests_total edge_route_errors_total
	edge_request_duration_seconds edge_requests_total edge_requests_in_flight
	edge_cell_up edge_cell_address_up edge_cell_ejections_total edge_upstream_errors_total
	edge_tunnel_connections edge_tunnel_connects_total
	edge_parked_polls edge_runner_polls_held edge_runner_polls_total edge_runner_job_wait_seconds edge_runner_capability_info
	edge_admission_decisions_total edge_admission_errors_total edge_admission_controller_duration_seconds edge_admission_jobs_total
	edge_registry_healthy edge_panics_total edge_config_reloads_total edge_org_moves edge_build_info`

type panel struct {
	Title   string
	Type    string
	Targets []struct{ Expr string }
	Panels  []panel // a collapsed row's
}

func TestDashboards(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 2 {
		t.Fatalf("generated %v, want edge-overview.json and edge-cell.json", files)
	}
	checkedIn := []string{"../../deploy/grafana", "../../deploy/helm/edge/dashboards"}
	for _, d := range checkedIn {
		if stale, _ := filepath.Glob(filepath.Join(d, "*.json")); len(stale) != len(files) {
			t.Errorf("%s holds %v, the generator writes %d files: run `make dashboards`", d, stale, len(files))
		}
	}
	metric := regexp.MustCompile(`edge_[a-z0-9_]+`)
	for _, f := range files {
		generated, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		for _, d := range checkedIn {
			got, err := os.ReadFile(filepath.Join(d, name))
			if err != nil {
				t.Errorf("%v: run `make dashboards`", err)
			} else if !bytes.Equal(got, generated) {
				t.Errorf("%s/%s differs from the generator's output: run `make dashboards`", d, name)
			}
		}
		var dash struct{ Panels []panel }
		if err := json.Unmarshal(generated, &dash); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		panels := dash.Panels
		for i := 0; i < len(panels); i++ {
			panels = append(panels, panels[i].Panels...)
		}
		if len(panels) == 0 {
			t.Errorf("%s: no panels", name)
		}
		for _, p := range panels {
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", name, p.Title)
			}
			for _, q := range p.Targets {
				if strings.TrimSpace(q.Expr) == "" {
					t.Errorf("%s: panel %q has an empty expr", name, p.Title)
				}
				for _, m := range metric.FindAllString(q.Expr, -1) {
					for _, suffix := range []string{"_bucket", "_count", "_sum"} {
						m = strings.TrimSuffix(m, suffix)
					}
					if !slices.Contains(strings.Fields(exported), m) {
						t.Errorf("%s: panel %q reads %s, which edge does not export: %s", name, p.Title, m, q.Expr)
					}
				}
			}
		}
	}
}
