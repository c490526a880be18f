package guard

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newGuard(t *testing.T) (*Guard, *bytes.Buffer, *prometheus.Registry) {
	t.Helper()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	g, err := New(slog.New(slog.NewJSONHandler(&syncWriter{b: &logs}, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	return g, &logs, reg
}

type syncWriter struct{ b *bytes.Buffer }

func (w *syncWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

func TestGoContainsAPanic(t *testing.T) {
	g, logs, _ := newGuard(t)
	done := make(chan struct{})
	g.Go("test_loop", func() {
		defer close(done)
		var m map[string]int
		m["boom"]++ // a nil map write: a runtime panic
	})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the goroutine's own defer did not run")
	}
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(g.panics.WithLabelValues("test_loop")) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("edge_panics_total{where=test_loop} = %v, want 1", testutil.ToFloat64(g.panics.WithLabelValues("test_loop")))
		}
		time.Sleep(5 * time.Millisecond)
	}
	line := logs.String()
	for _, want := range []string{`"msg":"panic contained"`, `"where":"test_loop"`, "assignment to entry in nil map", "guard_test.go"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
	if n := strings.Count(line, "panic contained"); n != 1 {
		t.Errorf("logged %d times, want once", n)
	}
}

func TestRecoverRunsCleanupAndTellsAnAbort(t *testing.T) {
	g, logs, _ := newGuard(t)
	for _, c := range []struct {
		name    string
		v       any
		crashed bool
	}{
		{"crash", errors.New("broken"), true},
		{"abort", http.ErrAbortHandler, false},
		{"wrapped abort", errors.Join(errors.New("copying"), http.ErrAbortHandler), false},
		{"string", "a plain string", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			got := make(chan bool, 1)
			func() {
				defer g.Recover("conn", func(crashed bool) { got <- crashed })
				panic(c.v)
			}()
			if crashed := <-got; crashed != c.crashed {
				t.Errorf("crashed = %v, want %v", crashed, c.crashed)
			}
			if logged := logs.Len() > 0; logged != c.crashed {
				t.Errorf("logged = %v, want %v (%s)", logged, c.crashed, logs.String())
			}
		})
	}
	if got := testutil.ToFloat64(g.panics.WithLabelValues("conn")); got != 2 {
		t.Errorf("edge_panics_total{where=conn} = %v, want 2 (aborts are not counted)", got)
	}
}

func TestNilGuardStillContains(t *testing.T) {
	var g *Guard
	cleaned := false
	func() {
		defer g.Recover("nil", func(bool) { cleaned = true })
		panic("no guard given")
	}()
	if !cleaned {
		t.Error("a nil guard did not run the cleanup")
	}
}

func TestRegistersTheCounter(t *testing.T) {
	_, _, reg := newGuard(t)
	g2, err := New(nil, reg)
	if err == nil || g2 != nil {
		t.Errorf("a second guard on one registry: err %v, want the duplicate registration refused", err)
	}
}
