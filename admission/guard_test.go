package admission

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

// crashingTransport is a controller's transport with a bug.
type crashingTransport struct{}

func (crashingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	panic("test: the controller's transport crashed")
}

// TestControllerPanicIsAFailedCall: a panic asking one controller is that controller failing
// (its on_error decides), counted as admission; the other controllers' answers stand.
func TestControllerPanicIsAFailedCall(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := guard.New(slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	good := newController(t, answer(true, "fine"))
	for _, admitOnError := range []bool{true, false} {
		crashing := &Controller{Name: "crashing", URL: "http://controller.invalid/", Transport: crashingTransport{},
			AdmitOnError: admitOnError, Guard: g}
		ok := &Controller{Name: "ok", URL: good.srv.URL, Guard: g}
		v := Ask(context.Background(), []*Controller{crashing, ok}, Request{Cell: 1})
		if v.Admitted != admitOnError {
			t.Errorf("on_error admit=%v: verdict admitted=%v", admitOnError, v.Admitted)
		}
		if len(v.Results) != 2 || !errors.Is(v.Results[0].Err, errCrashed) || v.Results[0].Admitted != admitOnError {
			t.Errorf("on_error admit=%v: the crashing controller's result: %+v", admitOnError, v.Results)
		}
		if len(v.Results) == 2 && (v.Results[1].Err != nil || !v.Results[1].Admitted) {
			t.Errorf("the other controller's result: %+v", v.Results[1])
		}
	}
	if got := g.Contained("admission"); got != 2 {
		t.Errorf("edge_panics_total{where=admission}: got %v, want 2", got)
	}
}
