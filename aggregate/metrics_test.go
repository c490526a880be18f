package aggregate

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// Last is each member's latest outcome, for the status page.
func TestMetricsLast(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.observe("a", &http.Response{StatusCode: http.StatusOK}, nil, time.Millisecond)
	m.observe("b", nil, errors.New("dial tcp: refused"), time.Millisecond)
	m.observe("a", &http.Response{StatusCode: http.StatusServiceUnavailable}, nil, time.Millisecond)
	last := m.Last()
	if last["a"].Outcome != "5xx" || last["b"].Outcome != "unreachable" || last["a"].At.IsZero() || len(last) != 2 {
		t.Errorf("Last: %+v", last)
	}
}
