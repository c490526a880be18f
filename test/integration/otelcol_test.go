package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// The tracing tests check edge's spans with a real OpenTelemetry Collector: v0.161.0, its OTLP
// receiver and file exporter, built from the Go module proxy by scripts/otelcol.sh
// (test/otelcol). startCollector runs one on loopback; Spans reads what it received.

// collectorReadyTimeout bounds the collector's start, from its launch to its OTLP HTTP port
// answering (about 100 ms once built).
const collectorReadyTimeout = 30 * time.Second

// collector is a running OpenTelemetry Collector whose traces pipeline takes OTLP over gRPC and
// HTTP and writes what it takes to a file, one OTLP JSON export request per line.
type collector struct {
	proc     *process
	grpcAddr string // 127.0.0.1:port
	httpAddr string // 127.0.0.1:port
	file     string // the file exporter's output
}

// span is one span the collector received, flattened from OTLP JSON.
type span struct {
	TraceID      string // 32 hex digits
	SpanID       string // 16 hex digits
	ParentSpanID string // empty for a root span
	Name         string
	// Kind is "unspecified", "internal", "server", "client", "producer" or "consumer".
	Kind string
	// Service is the resource attribute service.name.
	Service string
	// Attributes are the span's own attributes (not the resource's): strings as they are,
	// numbers and booleans in decimal or true/false, arrays and maps as their OTLP JSON.
	Attributes map[string]string
	// Status is "unset", "ok" or "error"; StatusMessage is its description.
	Status        string
	StatusMessage string
}

// startCollector runs the collector (building it first if no test has: minutes) on two free
// loopback ports until the test ends, and returns once its OTLP HTTP port answers.
func startCollector(t *testing.T) *collector {
	t.Helper()
	bin := scriptTool(t, "otelcol.sh")
	dir := t.TempDir()
	c := &collector{grpcAddr: freeAddr(t), httpAddr: freeAddr(t), file: filepath.Join(dir, "traces.jsonl")}
	// No own metrics: the collector's Prometheus endpoint would take port 8888 in every one.
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    format: json
    flush_interval: 20ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: info
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, c.grpcAddr, c.httpAddr, c.file)
	cfgFile := filepath.Join(dir, "otelcol.yaml")
	writeFile(t, cfgFile, []byte(cfg))
	c.proc = startProcess(t, "otelcol", exec.Command(bin, "--config=file:"+cfgFile))
	// The collector starts its exporters before its receivers, and the receiver its gRPC server
	// before its HTTP one: an answer on the HTTP port (405 to a GET) means the pipeline is up.
	hc := &http.Client{Timeout: time.Second}
	poll.UntilState(t, collectorReadyTimeout, "the collector's OTLP HTTP port", func() (bool, string) {
		c.checkRunning(t)
		res, err := hc.Get(c.HTTPEndpoint() + "/v1/traces")
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return true, res.Status
	})
	return c
}

// HTTPEndpoint is the base URL of the OTLP/HTTP receiver; traces go to its /v1/traces.
func (c *collector) HTTPEndpoint() string { return "http://" + c.httpAddr }

// GRPCEndpoint is the host:port of the OTLP/gRPC receiver (plaintext).
func (c *collector) GRPCEndpoint() string { return c.grpcAddr }

// checkRunning fails the test when the collector has exited.
func (c *collector) checkRunning(t *testing.T) {
	t.Helper()
	select {
	case <-c.proc.exited:
		t.Fatalf("the collector exited: %v", c.proc.waitErr)
	default:
	}
}

// Spans is every span the collector has written so far, in the order it received them. The file
// exporter flushes every 20 ms: a span sent just now may not be there yet (see WaitSpans).
func (c *collector) Spans(t *testing.T) []span {
	t.Helper()
	spans, err := readCollectorFile(c.file)
	if err != nil {
		t.Fatalf("collector output %s: %v", c.file, err)
	}
	return spans
}

// WaitSpans polls Spans until cond holds for them and returns them; it fails the test when
// timeout passes first or the collector exits.
func (c *collector) WaitSpans(t *testing.T, timeout time.Duration, cond func([]span) bool) []span {
	t.Helper()
	var spans []span
	poll.UntilState(t, timeout, "the collector's spans", func() (bool, string) {
		c.checkRunning(t)
		spans = c.Spans(t)
		return cond(spans), fmt.Sprintf("%d spans: %s", len(spans), spanNames(spans))
	})
	return spans
}

// spanNames lists the spans' service/name, for failure messages.
func spanNames(spans []span) string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Service + "/" + s.Name
	}
	return strings.Join(names, ", ")
}

// readCollectorFile parses the file exporter's output: one ExportTraceServiceRequest in OTLP JSON
// a line. A last line without its newline is still being written and is left for the next read.
func readCollectorFile(path string) ([]span, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var spans []span
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var req otlpTraces
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		spans = append(spans, req.spans()...)
	}
	return spans, sc.Err()
}

// otlpTraces is the part of an ExportTraceServiceRequest in OTLP JSON that span keeps.
type otlpTraces struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpKeyValue `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []struct {
				TraceID      string         `json:"traceId"`
				SpanID       string         `json:"spanId"`
				ParentSpanID string         `json:"parentSpanId"`
				Name         string         `json:"name"`
				Kind         otlpEnum       `json:"kind"`
				Attributes   []otlpKeyValue `json:"attributes"`
				Status       struct {
					Code    otlpEnum `json:"code"`
					Message string   `json:"message"`
				} `json:"status"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

func (r otlpTraces) spans() []span {
	var out []span
	for _, rs := range r.ResourceSpans {
		service := otlpAttributes(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out = append(out, span{
					TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
					Name:          s.Name,
					Kind:          s.Kind.name(otlpSpanKinds, "SPAN_KIND_"),
					Service:       service,
					Attributes:    otlpAttributes(s.Attributes),
					Status:        s.Status.Code.name(otlpStatusCodes, "STATUS_CODE_"),
					StatusMessage: s.Status.Message,
				})
			}
		}
	}
	return out
}

var (
	otlpSpanKinds   = []string{"unspecified", "internal", "server", "client", "producer", "consumer"}
	otlpStatusCodes = []string{"unset", "ok", "error"}
)

// otlpEnum is an OTLP JSON enum: an integer, as the collector writes it, or its name.
type otlpEnum struct{ raw json.RawMessage }

func (e *otlpEnum) UnmarshalJSON(b []byte) error {
	e.raw = append(json.RawMessage(nil), b...)
	return nil
}

// name is the enum's lower-case name without prefix; absent is value 0.
func (e otlpEnum) name(names []string, prefix string) string {
	if len(e.raw) == 0 {
		return names[0]
	}
	var s string
	if json.Unmarshal(e.raw, &s) == nil {
		return strings.ToLower(strings.TrimPrefix(s, prefix))
	}
	var n int
	if json.Unmarshal(e.raw, &n) == nil && n >= 0 && n < len(names) {
		return names[n]
	}
	return string(e.raw)
}

// otlpKeyValue is an attribute in OTLP JSON: a key and an AnyValue.
type otlpKeyValue struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string         `json:"stringValue"`
		IntValue    json.RawMessage `json:"intValue"` // int64: a string in OTLP JSON
		BoolValue   *bool           `json:"boolValue"`
		DoubleValue *float64        `json:"doubleValue"`
		ArrayValue  json.RawMessage `json:"arrayValue"`
		KvlistValue json.RawMessage `json:"kvlistValue"`
		BytesValue  *string         `json:"bytesValue"` // base64
	} `json:"value"`
}

// otlpAttributes flattens attributes into strings (see span.Attributes).
func otlpAttributes(kvs []otlpKeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.StringValue != nil:
			m[kv.Key] = *v.StringValue
		case v.IntValue != nil:
			m[kv.Key] = strings.Trim(string(v.IntValue), `"`)
		case v.BoolValue != nil:
			m[kv.Key] = strconv.FormatBool(*v.BoolValue)
		case v.DoubleValue != nil:
			m[kv.Key] = strconv.FormatFloat(*v.DoubleValue, 'g', -1, 64)
		case v.ArrayValue != nil:
			m[kv.Key] = string(v.ArrayValue)
		case v.KvlistValue != nil:
			m[kv.Key] = string(v.KvlistValue)
		case v.BytesValue != nil:
			m[kv.Key] = *v.BytesValue
		default:
			m[kv.Key] = ""
		}
	}
	return m
}

// TestCollectorHarness proves startCollector with the OpenTelemetry Go SDK, which edge exports
// with: one trace of a server span and its client child over OTLP/HTTP (protobuf), one over
// OTLP/gRPC, each from a service of its own; Spans returns both with their parent links.
func TestCollectorHarness(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := startCollector(t)
	t.Logf("collector ready in %v (HTTP %s, gRPC %s)", time.Since(start).Round(time.Millisecond), c.HTTPEndpoint(), c.GRPCEndpoint())

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	httpExp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.HTTPEndpoint()+"/v1/traces"))
	if err != nil {
		t.Fatalf("otlptracehttp: %v", err)
	}
	grpcExp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(c.GRPCEndpoint()), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatalf("otlptracegrpc: %v", err)
	}
	sent := map[string]sentTrace{ // by service
		"edge-http": sendTestTrace(ctx, t, httpExp, "edge-http"),
		"edge-grpc": sendTestTrace(ctx, t, grpcExp, "edge-grpc"),
	}

	spans := c.WaitSpans(t, 10*time.Second, func(s []span) bool { return len(s) >= 4 })
	if len(spans) != 4 {
		t.Fatalf("got %d spans (%s), want 4", len(spans), spanNames(spans))
	}
	byTrace := map[string][]span{}
	for _, s := range spans {
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	for service, want := range sent {
		got := byTrace[want.traceID]
		if len(got) != 2 {
			t.Errorf("%s: trace %s has %d spans (%s), want 2", service, want.traceID, len(got), spanNames(got))
			continue
		}
		sort.Slice(got, func(i, j int) bool { return got[i].ParentSpanID < got[j].ParentSpanID }) // root first
		parent, child := got[0], got[1]
		wantParent := span{
			TraceID: want.traceID, SpanID: want.parentID, Name: "GET /api/v4/jobs/request", Kind: "server",
			Service:    service,
			Attributes: map[string]string{"http.request.method": "GET", "http.response.status_code": "200", "edge.retried": "false"},
			Status:     "ok",
		}
		wantChild := span{
			TraceID: want.traceID, SpanID: want.childID, ParentSpanID: want.parentID, Name: "cell 2", Kind: "client",
			Service:    service,
			Attributes: map[string]string{"edge.cell": "2", "edge.weight": "0.5"},
			Status:     "error", StatusMessage: "cell unavailable",
		}
		if d := diffSpan(parent, wantParent); d != "" {
			t.Errorf("%s: parent span: %s", service, d)
		}
		if d := diffSpan(child, wantChild); d != "" {
			t.Errorf("%s: child span: %s", service, d)
		}
	}
}

// sentTrace is what the SDK made of the spans sendTestTrace sent.
type sentTrace struct{ traceID, parentID, childID string }

// sendTestTrace sends one trace of two spans, a server span and its client child, through exp as
// service, and waits until the SDK has exported them.
func sendTestTrace(ctx context.Context, t *testing.T, exp sdktrace.SpanExporter, service string) sentTrace {
	t.Helper()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	)
	tracer := tp.Tracer("gitlab.com/edge/edge/test/integration")
	pctx, parent := tracer.Start(ctx, "GET /api/v4/jobs/request", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "GET"), attribute.Int("http.response.status_code", 200),
			attribute.Bool("edge.retried", false)))
	_, child := tracer.Start(pctx, "cell 2", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int64("edge.cell", 2), attribute.Float64("edge.weight", 0.5)))
	child.SetStatus(codes.Error, "cell unavailable")
	child.End()
	parent.SetStatus(codes.Ok, "")
	parent.End()
	// Shutdown flushes the batch and fails when the export does.
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("%s: export: %v", service, err)
	}
	return sentTrace{
		traceID:  parent.SpanContext().TraceID().String(),
		parentID: parent.SpanContext().SpanID().String(),
		childID:  child.SpanContext().SpanID().String(),
	}
}

// diffSpan says how got differs from want, or "".
func diffSpan(got, want span) string {
	var d []string
	field := func(name, g, w string) {
		if g != w {
			d = append(d, fmt.Sprintf("%s %q, want %q", name, g, w))
		}
	}
	field("trace", got.TraceID, want.TraceID)
	field("span", got.SpanID, want.SpanID)
	field("parent", got.ParentSpanID, want.ParentSpanID)
	field("name", got.Name, want.Name)
	field("kind", got.Kind, want.Kind)
	field("service", got.Service, want.Service)
	field("status", got.Status, want.Status)
	field("status message", got.StatusMessage, want.StatusMessage)
	if fmt.Sprint(got.Attributes) != fmt.Sprint(want.Attributes) { // fmt sorts map keys
		d = append(d, fmt.Sprintf("attributes %v, want %v", got.Attributes, want.Attributes))
	}
	return strings.Join(d, "; ")
}
