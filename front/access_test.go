package front

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gitlab.com/edge/edge/hop"
)

// wrapping is a handler's own writer around the front's, as the workspace cookie filter is.
type wrapping struct{ http.ResponseWriter }

func (w wrapping) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestAccessLogCauseThroughWrappers: an error written through a writer that wraps the front's
// names its cause in the access line, as one written to the front's writer itself does.
func TestAccessLogCauseThroughWrappers(t *testing.T) {
	var logs bytes.Buffer
	front := New(Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	rt := testRoutes(Route{Name: "workspace", Domain: "ws.example", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hop.Write(wrapping{wrapping{w}}, http.StatusGatewayTimeout, "agent_not_connected", "agent a1 did not connect in time")
	})})
	rt.AccessLog = true
	if err := front.Swap(rt); err != nil {
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
