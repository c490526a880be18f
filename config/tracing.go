package config

import (
	"net/url"
	"slices"
)

// Tracing exports OpenTelemetry traces over OTLP; absent, edge makes no spans.
type Tracing struct {
	Endpoint    string  `yaml:"otlp_endpoint"` // http(s)://host:port of the collector
	Protocol    string  `yaml:"protocol"`      // http/protobuf or grpc
	SampleRatio float64 `yaml:"sample_ratio"`  // of the traces edge starts; a continued trace keeps its parent's choice
	ServiceName string  `yaml:"service_name"`
}

// The tracing protocols.
const (
	TracingHTTP = "http/protobuf"
	TracingGRPC = "grpc"
)

func (t *Tracing) setDefaults() {
	t.Protocol, t.SampleRatio, t.ServiceName = TracingHTTP, 1, "edge"
}

func (t *Tracing) validate(ch *checker) {
	const p = "tracing"
	if u, err := url.Parse(t.Endpoint); t.Endpoint == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ch.add(p+".otlp_endpoint", "must be the collector's http(s)://host:port")
	}
	if !slices.Contains([]string{TracingHTTP, TracingGRPC}, t.Protocol) {
		ch.add(p+".protocol", "must be %s or %s", TracingHTTP, TracingGRPC)
	}
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		ch.add(p+".sample_ratio", "must be between 0 and 1")
	}
	if t.ServiceName == "" {
		ch.add(p+".service_name", "must not be empty")
	}
}
