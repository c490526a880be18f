// Package spantest is a test's tracer: every span it ends is kept, after Shutdown too (the
// OpenTelemetry SDK's in-memory exporter forgets them on Shutdown).
package spantest

import (
	"context"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"gitlab.com/edge/edge/tracing"
)

// Recorder keeps every span exported to it.
type Recorder struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (e *Recorder) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spans = append(e.spans, spans...)
	return nil
}

func (e *Recorder) Shutdown(context.Context) error { return nil }

// Spans are the spans exported so far.
func (e *Recorder) Spans() []sdktrace.ReadOnlySpan {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), e.spans...)
}

// Discard drops every span: a tracer whose cost alone a benchmark measures.
type Discard struct{}

func (Discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (Discard) Shutdown(context.Context) error                             { return nil }

// NewTracer is edge's tracer sampling ratio of the traces, exporting to exp.
func NewTracer(t testing.TB, ratio float64, exp sdktrace.SpanExporter) *tracing.Tracer {
	t.Helper()
	tr, err := tracing.New(context.Background(), tracing.Options{SampleRatio: ratio, ServiceName: "edge", Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr
}
