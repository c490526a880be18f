package tracing

import (
	"context"
	"net/http"
	"testing"
)

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":            "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":           "http://127.0.0.1:4318/v1/traces",
		"https://otel.example/custom/path": "https://otel.example/custom/path",
	} {
		if got := tracesURL(in); got != want {
			t.Errorf("tracesURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A nil tracer is tracing off: its transport is the one it wraps, and shutting it down is fine.
func TestNilTracerIsOff(t *testing.T) {
	var tr *Tracer
	base := http.DefaultTransport
	if got := tr.Transport(base, "cell", nil); got != base {
		t.Errorf("nil tracer wrapped the transport: %T", got)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
