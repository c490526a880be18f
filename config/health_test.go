package config

import (
	"testing"
	"time"
)

// A cell's check is its own block over the top-level one over DefaultHealth; without either, the
// cell is not checked.
func TestCellHealth(t *testing.T) {
	c := mustParse(t, "", lines(
		"health: {interval: 10s, unhealthy_after: 3}",
		"cells:",
		`  - {id: 1, url: "http://a", legacy: true}`,
		`  - {id: 2, urls: ["http://b:1", "http://b:2"], health: {path: /ready, timeout: 1s}}`,
	))
	want1 := HealthCheck{Path: "/-/readiness", Interval: Duration{10 * time.Second}, Timeout: Duration{2 * time.Second}, HealthyAfter: 1, UnhealthyAfter: 3}
	if got := c.CellHealth(0); got == nil || *got != want1 {
		t.Errorf("cell 1: got %+v, want %+v", got, want1)
	}
	want2 := HealthCheck{Path: "/ready", Interval: Duration{10 * time.Second}, Timeout: Duration{time.Second}, HealthyAfter: 1, UnhealthyAfter: 3}
	if got := c.CellHealth(1); got == nil || *got != want2 {
		t.Errorf("cell 2: got %+v, want %+v", got, want2)
	}
	if got := c.Cells[1].Addresses(); len(got) != 2 || got[1] != "http://b:2" {
		t.Errorf("addresses: got %v", got)
	}
	none := mustParse(t, "", lines("cells:", `  - {id: 1, url: "http://a", legacy: true}`))
	if got := none.CellHealth(0); got != nil {
		t.Errorf("no health block: got %+v, want no check", got)
	}
}
