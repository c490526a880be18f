package config

import (
	"os"
	"path/filepath"
	"testing"
)

// An agent's traces are its own service unless it names one; edge's default to "edge".
func TestTracingDefaults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("token", "x")
	for _, tt := range []struct{ src, want string }{
		{`tracing: {otlp_endpoint: "http://127.0.0.1:4318"}`, "edge-agent"},
		{`tracing: {otlp_endpoint: "http://127.0.0.1:4318", service_name: agents-eu}`, "agents-eu"},
	} {
		a, err := LoadAgent(write("agent.yaml", "edge: http://127.0.0.1:8080\ntoken_file: token\nallow_ports: [80]\n"+tt.src+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if a.Tracing.ServiceName != tt.want || a.Tracing.Protocol != TracingHTTP || a.Tracing.SampleRatio != 1 {
			t.Errorf("%s: got %+v, want service %s, http/protobuf, ratio 1", tt.src, a.Tracing, tt.want)
		}
	}
	c := mustParse(t, "", lines(`tracing: {otlp_endpoint: "http://127.0.0.1:4317", protocol: grpc, sample_ratio: 0.25}`,
		"cells:", `  - {id: 1, url: "http://a", legacy: true}`))
	if tr := c.Tracing; tr == nil || tr.ServiceName != "edge" || tr.Protocol != TracingGRPC || tr.SampleRatio != 0.25 {
		t.Errorf("edge tracing: %+v", tr)
	}
}
