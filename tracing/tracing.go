// Package tracing is edge's OpenTelemetry tracing: a tracer exporting over OTLP, W3C trace
// context in and out, a server span per request and client spans for calls to cells, peers,
// tunnels and upstreams. A nil *Tracer is tracing off: every method is then a no-op that costs a
// nil check, so the request path pays nothing for tracing it does not do.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Tracer.
type Options struct {
	Endpoint    string  // the collector's http(s)://host:port
	Protocol    string  // "http/protobuf" or "grpc"
	SampleRatio float64 // of the traces this process starts; a continued trace keeps its parent's choice
	ServiceName string
	Version     string
	// Exporter, when set, takes the spans instead of OTLP (benchmarks, tests).
	Exporter sdktrace.SpanExporter
}

// Tracer makes edge's spans. Its zero value is not usable; nil is tracing off.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TraceContext
}

// New makes a tracer that batches its spans to the collector.
func New(ctx context.Context, o Options) (*Tracer, error) {
	exp := o.Exporter
	if exp == nil {
		var err error
		switch o.Protocol {
		case "grpc":
			exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(o.Endpoint))
		case "http/protobuf", "":
			exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(tracesURL(o.Endpoint)))
		default:
			err = fmt.Errorf("protocol %q: want http/protobuf or grpc", o.Protocol)
		}
		if err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
	}
	res := resource.NewSchemaless(attribute.String("service.name", o.ServiceName), attribute.String("service.version", o.Version))
	p := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))),
	)
	return &Tracer{provider: p, tracer: p.Tracer("gitlab.com/edge/edge")}, nil
}

// tracesURL is where OTLP/HTTP sends traces: the endpoint's own path, or, for a bare collector
// address, /v1/traces (as OTEL_EXPORTER_OTLP_ENDPOINT is read).
func tracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return endpoint
	}
	u.Path = "/v1/traces"
	return u.String()
}

// Shutdown sends the spans still buffered and stops.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Server starts the server span of an incoming request. The caller's trace (traceparent,
// tracestate) is continued only when trusted; from anyone else edge starts a new trace and drops
// those headers, so nothing the client made up reaches a cell. The returned request carries the
// span's context.
func (t *Tracer) Server(r *http.Request, trusted bool) (*http.Request, trace.Span) {
	ctx := r.Context()
	if trusted {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	} else {
		r.Header.Del("Traceparent")
		r.Header.Del("Tracestate")
	}
	ctx, span := t.tracer.Start(ctx, "edge "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
	return r.WithContext(ctx), span
}

// End ends a server span with the answer's status.
func End(span trace.Span, status int, attrs ...attribute.KeyValue) {
	span.SetAttributes(attrs...)
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(status))
	}
	span.End()
}

// Transport wraps base: each request is a client span named name, a child of the request's
// context, whose trace context goes out in the request's traceparent and tracestate. attrs adds
// what the caller knows of the request (cell, agent, address).
func (t *Tracer) Transport(base http.RoundTripper, name string, attrs func(*http.Request) []attribute.KeyValue) http.RoundTripper {
	if t == nil {
		return base
	}
	return &clientTransport{t: t, base: base, name: name, attrs: attrs}
}

type clientTransport struct {
	t     *Tracer
	base  http.RoundTripper
	name  string
	attrs func(*http.Request) []attribute.KeyValue
}

func (c *clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() {
		// A request that came down a tunnel: its parent is the span edge sent with it.
		ctx = c.t.prop.Extract(ctx, propagation.HeaderCarrier(req.Header))
	}
	ctx, span := c.t.tracer.Start(ctx, c.name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", req.Method), attribute.String("server.address", req.URL.Host)))
	if c.attrs != nil {
		span.SetAttributes(c.attrs(req)...)
	}
	c.t.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, errorKind(err))
		span.End()
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	span.End()
	return resp, nil
}

// CloseIdleConnections passes on to the wrapped transport.
func (c *clientTransport) CloseIdleConnections() {
	if ci, ok := c.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func errorKind(err error) string {
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return "transport error"
}
