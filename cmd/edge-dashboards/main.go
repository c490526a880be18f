// edge-dashboards writes edge's Grafana dashboards, built with Grafana's foundation SDK, as JSON
// files: `make dashboards` regenerates deploy/grafana/ and the Helm chart's copies.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func main() {
	out := flag.String("out", "deploy/grafana", "directory to write the dashboards into")
	chart := flag.String("chart", "", "a second directory for the same files: the Helm chart's copies (helm reads no file outside the chart)")
	flag.Parse()
	if err := generate(*out, *chart); err != nil {
		fmt.Fprintln(os.Stderr, "edge-dashboards:", err)
		os.Exit(1)
	}
}

// generate writes every dashboard into each non-empty dir.
func generate(dirs ...string) error {
	files, err := render()
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// render returns each dashboard file's name and bytes.
func render() (map[string][]byte, error) {
	builders := map[string]*dashboard.DashboardBuilder{
		"edge-overview.json": overview(),
		"edge-cell.json":     cell(),
	}
	files := map[string][]byte{}
	for name, b := range builders {
		d, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		numberPanels(&d)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf) // Encode ends the file with a newline
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files[name] = buf.Bytes()
	}
	return files, nil
}

// numberPanels gives each panel and row an id, in layout order, so that the files stay the same
// from run to run and links to a panel (viewPanel=N) keep working.
func numberPanels(d *dashboard.Dashboard) {
	id := uint32(0)
	for _, p := range d.Panels {
		id++
		if p.RowPanel != nil {
			p.RowPanel.Id = id
			for i := range p.RowPanel.Panels {
				id++
				p.RowPanel.Panels[i].Id = cog.ToPtr(id)
			}
			continue
		}
		p.Panel.Id = cog.ToPtr(id)
	}
}
