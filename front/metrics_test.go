package front

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"gitlab.com/edge/edge/hop"
)

// TestMetricsCountEveryRequestAndEdgesOwnAnswers: a route's requests by status class, and the
// answers edge made itself by cause: a handler's error, the front's refusal of an odd path, a
// panic; a cell's own 5xx is traffic, not an error of edge's.
func TestMetricsCountEveryRequestAndEdgesOwnAnswers(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := New(Options{Metrics: m})
	cellSays503 := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	edgeFails := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hop.Write(w, http.StatusBadGateway, "connection_refused", "cell 1 refused the connection")
	})
	panics := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	if err := f.Swap(testRoutes(
		Route{Name: "cell503", Path: "/cell503", Handler: cellSays503},
		Route{Name: "failing", Path: "/failing", Handler: edgeFails},
		Route{Name: "panicking", Path: "/panicking", Handler: panics},
	)); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/api/v4/jobs/1", "/api/v4/jobs/2", "/api/v4/jobs/%2e%2e/x", "/cell503", "/failing", "/failing", "/panicking"} {
		f.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
	}
	for _, c := range []struct {
		metric *prometheus.CounterVec
		labels []string
		want   float64
	}{
		{m.requests, []string{"runner", "2xx"}, 2},
		{m.requests, []string{"runner", "4xx"}, 1},
		{m.requests, []string{"cell503", "5xx"}, 1},
		{m.requests, []string{"failing", "5xx"}, 2},
		{m.requests, []string{"panicking", "5xx"}, 1},
		{m.errors, []string{"failing", "5xx", "connection_refused"}, 2},
		{m.errors, []string{"panicking", "5xx", "panic"}, 1},
	} {
		if got := testutil.ToFloat64(c.metric.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("%v: %v, want %v", c.labels, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.errors); n != 3 {
		t.Errorf("%d series of edge's own answers, want 3 (the odd path's refusal, the failing route's, the panic; none for the cell's 503)", n)
	}
}
