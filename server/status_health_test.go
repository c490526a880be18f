package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"gitlab.com/edge/edge/discovery"
)

// A cell whose only address passive evidence ejected is up and degraded, on the page and in the
// JSON, which say what ejected the address.
func TestStatusShowsWhatEjected(t *testing.T) {
	e := buildFile(t, "../examples/edge.yaml")
	var cell *discovery.CellHealth
	var cells *cellHealth
	for _, m := range e.modules {
		if h, ok := m.status.(*cellHealth); ok {
			cells = h
		}
	}
	for _, c := range cells.health.InForce() {
		if len(c.Addrs) == 1 && (cell == nil || c.ID < cell.ID) {
			cell = c
		}
	}
	if cell == nil {
		t.Fatal("no cell with one address in examples/edge.yaml")
	}
	cell.ConnectFailed(cell.Addrs[0])
	h := opsHandler(opsParts{reg: NewMetricsRegistry(ReadBuildInfo()), health: &health{}, registryHealthy: func() bool { return true }, status: e.status})
	get := func(path string) string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Body.String()
	}
	var s Status
	if err := json.Unmarshal([]byte(get("/status.json")), &s); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range s.Cells {
		if c.ID != cell.ID {
			continue
		}
		found = true
		if !c.Up || !c.Degraded || c.Addresses[0].EjectedBy != "connect" || c.Addresses[0].Up {
			t.Errorf("cell %d: %+v, want up, degraded, its address ejected by connect", c.ID, c)
		}
		// No request went to it: no latency to show, not 0s.
		if c.Recent.Requests != 0 || c.P50 != "none" || c.P99 != "none" {
			t.Errorf("cell %d with %d recent requests: p50 %q p99 %q, want none", c.ID, c.Recent.Requests, c.P50, c.P99)
		}
	}
	if !found {
		t.Fatalf("/status.json lacks cell %d", cell.ID)
	}
	page := get("/status")
	row := page[strings.Index(page, `id="cell-`+strconv.FormatUint(cell.ID, 10)+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	for _, want := range []string{`class="degraded">degraded`, "ejected</span> by connect failures until", "<td>none</td><td>none</td>"} {
		if !strings.Contains(row, want) {
			t.Errorf("cell %d's row lacks %q:\n%s", cell.ID, want, row)
		}
	}
}
