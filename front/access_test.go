package proxy

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"gitlab.com/edge/edge/discovery"
)

// wrapping is a handler's own writer around the front's, as the workspace cookie filter is.
type wrapping struct{ http.ResponseWriter }

func (w wrapping) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestAccessLogCauseThroughWrappers: an error written through a writer that wraps the front's
// names its cause in the access line, as one written to the front's writer itself does.
func TestAccessLogCauseThroughWrappers(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	cells, err := discovery.NewCells([]discovery.Cell{{ID: 1, URL: u, Legacy: true}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Cells: cells})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	front := NewFront(slog.New(slog.NewTextHandler(&logs, nil)), nil)
	ws := &HostRoute{Domain: "ws.example", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(wrapping{wrapping{w}}, http.StatusGatewayTimeout, "agent_not_connected", "agent a1 did not connect in time")
	})}
	if err := front.Swap(&Routes{Runner: p, Workspaces: ws, AccessLog: true}); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://8080-w.ws.example/", nil)
	rec := httptest.NewRecorder()
	front.ServeHTTP(rec, req)
	if rec.Code != http.StatusGatewayTimeout {
		t.Fatalf("status %d", rec.Code)
	}
	line := logs.String()
	if !strings.Contains(line, "msg=access") || !strings.Contains(line, "cause=agent_not_connected") {
		t.Errorf("access line %q does not name the cause", line)
	}
}
