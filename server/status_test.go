package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The status page and its JSON show the cells and this edge, under a CSP that allows nothing but
// the page's own style.
func TestStatusPage(t *testing.T) {
	e := buildFile(t, "../examples/edge.yaml")
	h := opsHandler(opsParts{reg: NewMetricsRegistry(ReadBuildInfo()), health: &health{}, registryHealthy: func() bool { return true }, status: e.status})
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	page := get("/status")
	csp := page.Header().Get("Content-Security-Policy")
	if page.Code != http.StatusOK || !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") || strings.Contains(csp, "unsafe") {
		t.Fatalf("/status: %d, CSP %q", page.Code, csp)
	}
	body := page.Body.String()
	for _, want := range []string{`<meta http-equiv="refresh"`, `id="cell-1"`, `id="cell-2"`, "Latest refusals"} {
		if !strings.Contains(body, want) {
			t.Errorf("/status lacks %s", want)
		}
	}
	if strings.Contains(body, "<script") || strings.Contains(body, "http://") && strings.Contains(body, "<link") {
		t.Error("/status loads something besides itself")
	}
	var s Status
	js := get("/status.json")
	if err := json.Unmarshal(js.Body.Bytes(), &s); err != nil || js.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("/status.json: %v %q", err, js.Body.String())
	}
	if len(s.Cells) < 2 || s.Edge.LastReload.Result != "none" || s.Edge.Config != "" && s.Edge.ConfigSHA256 == "" {
		t.Errorf("/status.json: %+v", s)
	}
	if got := e.status(context.Background()); len(got.Cells) != len(s.Cells) {
		t.Errorf("status: %d cells, JSON %d", len(got.Cells), len(s.Cells))
	}
}
