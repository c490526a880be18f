package discovery

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

type crashingRoundTripper struct{}

func (crashingRoundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	panic("test: the classify call crashed")
}

// A classify call that panics is contained (singleflight's DoChan would re-panic it on its own
// goroutine, ending the process): the lookup fails with ErrClassify and the panic is counted.
func TestClassifyContainsAPanic(t *testing.T) {
	g, err := guard.New(slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(ClassifierOptions{URL: "http://127.0.0.1:9", Client: &http.Client{Transport: crashingRoundTripper{}}, Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Classify(context.Background(), ClassifyProject, 42); !errors.Is(err, ErrClassify) {
		t.Errorf("Classify: %v, want ErrClassify", err)
	}
	if n := g.Contained("classify"); n != 1 {
		t.Errorf("edge_panics_total{where=classify} = %v, want 1", n)
	}
}
