package cellrouter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/internal/testkit/spantest"
	"gitlab.com/edge/edge/tracing"
)

// A runner request is a server span and its call to the cell a child client span, whose
// traceparent the cell receives; the server span names the route, cell, rule and token kind,
// never the token. A traceparent from a peer outside trusted_proxies starts a new trace.
func TestRunnerRequestSpans(t *testing.T) {
	exp := &spantest.Recorder{}
	tr := spantest.NewTracer(t, 1, exp)
	f := newFixture(t, func(o *Options) { o.Tracer = tr })
	const incoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tok := routable(t, 2)
	do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", tok, "Traceparent", incoming))
	seen := f.only(t, 2)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want a server and a client span", len(spans))
	}
	client, server := spans[0], spans[1]
	if server.SpanKind() != trace.SpanKindServer || client.SpanKind() != trace.SpanKindClient || client.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Fatalf("spans: %+v / %+v", server, client)
	}
	if server.SpanContext().TraceID().String() == "0af7651916cd43dd8448eb211c80319c" || server.Parent().IsValid() {
		t.Error("the untrusted client's traceparent was continued")
	}
	want := "00-" + client.SpanContext().TraceID().String() + "-" + client.SpanContext().SpanID().String() + "-01"
	if got := seen.header.Get("Traceparent"); got != want {
		t.Errorf("the cell got traceparent %q, want the client span's %q", got, want)
	}
	attrs := map[string]string{}
	for _, a := range server.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
		if a.Value.Emit() == tok {
			t.Errorf("attribute %s holds the token", a.Key)
		}
	}
	for k, v := range map[string]string{"edge.route": "runner", "edge.cell": "2", "edge.rule": "routable_token_cell", "edge.token_kind": "routable", "http.response.status_code": "200"} {
		if attrs[k] != v {
			t.Errorf("server span %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	if attrs["edge.token_kind"] == "" || attrs["edge.request_id"] == "" {
		t.Errorf("server span lacks the token kind or request id: %v", attrs)
	}
}

// A runner request the front door refuses before the router sees it (the path rule) still names
// its token kind, none, and its cause in its span; a legacy request names no token kind.
func TestRefusedRunnerRequestSpan(t *testing.T) {
	exp := &spantest.Recorder{}
	tr := spantest.NewTracer(t, 1, exp)
	f := newFixture(t, func(o *Options) { o.Tracer = tr })
	resp, _ := do(t, newReq(t, "GET", f.front.URL+"/api/v4/jobs/%2e%2e/request", nil))
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	do(t, newReq(t, "GET", f.front.URL+"/users/sign_in", nil))
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, sp := range exp.Spans() {
		if sp.SpanKind() != trace.SpanKindServer {
			continue
		}
		attrs := map[string]string{}
		for _, a := range sp.Attributes() {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		kinds = append(kinds, attrs["edge.route"]+":"+attrs["edge.token_kind"]+":"+attrs["edge.cause"])
	}
	if want := []string{"runner:none:bad_path", "legacy::"}; !slices.Equal(kinds, want) {
		t.Errorf("server spans (route:token_kind:cause) %v, want %v", kinds, want)
	}
}

// From trusted_proxies, the caller's trace is continued.
func TestTrustedTraceparentContinued(t *testing.T) {
	exp := &spantest.Recorder{}
	tr := spantest.NewTracer(t, 1, exp)
	f := newFixtureRoutes(t, func(o *Options) { o.Tracer = tr }, func(rt *front.Routes) {
		rt.Headers = front.HeaderPolicy{Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", routable(t, 2),
		"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
	tr.Shutdown(context.Background())
	spans := exp.Spans()
	if len(spans) != 2 || spans[1].SpanContext().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || spans[1].Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("spans %v: want the trusted trace continued", spans)
	}
}

// BenchmarkServeHTTPTracing is one runner request with tracing off, on but not sampled, and
// sampled (spans made and handed to an exporter that drops them).
func BenchmarkServeHTTPTracing(b *testing.B) {
	tok := routable(b, 2)
	for _, c := range []struct {
		name  string
		ratio float64
		on    bool
	}{{"off", 0, false}, {"unsampled", 0, true}, {"sampled", 1, true}} {
		b.Run(c.name, func(b *testing.B) {
			var tr *tracing.Tracer
			if c.on {
				tr = spantest.NewTracer(b, c.ratio, spantest.Discard{})
			}
			p := benchProxy(b, func(o *Options) { o.Tracer = tr })
			edge := frontFor(b, p, front.Options{Tracer: tr}, nil)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("GET", "/api/v4/runners/router/discovery", nil)
				r.Header["Runner-Token"] = []string{tok}
				w := httptest.NewRecorder()
				edge.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
