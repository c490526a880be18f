package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTraceAcrossHops: a request to an agent enters edge 0, crosses to edge 1 that holds the
// agent, goes down the tunnel and reaches the upstream; the real OpenTelemetry Collector gets
// one trace of it, each hop's span the child of the one before (edge 0's server span, its client
// span to the peer, edge 1's server span, its tunnel span, the agent's span to the upstream), and
// the upstream sees the agent's span as its parent. One edge sends over OTLP/HTTP, the other and
// the agent over gRPC.
func TestTraceAcrossHops(t *testing.T) {
	col := startCollector(t)
	n := 0
	c := newTunnelClusterWith(t, 2, func(cfg *edgeConfig) {
		cfg.Tracing = &tracingConfig{Endpoint: col.HTTPEndpoint(), SampleRatio: 1}
		if n == 1 {
			cfg.Tracing = &tracingConfig{Endpoint: "http://" + col.GRPCEndpoint(), Protocol: "grpc", SampleRatio: 1}
		}
		n++
	})
	up := startUpstream(t, "a1")
	tokenFile := c.agentTokenFile("a1")
	conf := filepath.Join(c.dir, "agent.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `edge: %s
token_file: %s
allow_ports: [%d]
ops: %s
tracing: {otlp_endpoint: "http://%s", protocol: grpc}
`, c.edges[1].PublicURL, tokenFile, up.Port, freeAddr(t), col.GRPCEndpoint()), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := startProcess(t, "agent a1", exec.Command(edgeBinaryPath(), "agent", "--config", conf))
	c.mu.Lock()
	c.agents = append(c.agents, &agentProc{process: agent, ID: "a1"})
	c.mu.Unlock()
	c.waitHeld(t, "a1", c.edges[1], 15*time.Second)

	parts := upstreamTraceparent(t, c, 0, "a1", up.Port)
	traceID, upstreamParent := parts[1], parts[2]

	// The chain, from the upstream back to the entry: name (prefix), service, kind.
	want := []struct{ name, service, kind string }{
		{"upstream", "edge-agent", "client"},
		{"tunnel", "edge", "client"},
		{"edge internal", "edge", "server"},
		{"edge peer", "edge", "client"},
		{"edge gitlab_api", "edge", "server"},
	}
	spans := col.WaitSpans(t, 15*time.Second, func(s []span) bool {
		n := 0
		for _, sp := range s {
			if sp.TraceID == traceID {
				n++
			}
		}
		return n >= len(want)
	})
	byID := map[string]span{}
	for _, sp := range spans {
		if sp.TraceID == traceID {
			byID[sp.SpanID] = sp
		}
	}
	id := upstreamParent
	var chain []span
	for i, w := range want {
		sp, ok := byID[id]
		if !ok {
			t.Fatalf("hop %d (%s): no span %s in the trace; it has: %s", i, w.name, id, spanNames(spans))
		}
		chain = append(chain, sp)
		if !strings.HasPrefix(sp.Name, w.name) || sp.Service != w.service || sp.Kind != w.kind {
			t.Errorf("hop %d: got %q of %s (%s), want %q of %s (%s)", i, sp.Name, sp.Service, sp.Kind, w.name, w.service, w.kind)
		}
		id = sp.ParentSpanID
	}
	if id != "" {
		t.Errorf("edge 0's server span has parent %s, want a new trace (the client sent none)", id)
	}
	entry, holder := chain[4].Attributes, chain[2].Attributes
	if entry["edge.agent_id"] != "a1" || entry["edge.route"] != "gitlab_api" || entry["http.response.status_code"] != "200" || entry["edge.request_id"] == "" {
		t.Errorf("edge 0's server span attributes: %v", entry)
	}
	if holder["edge.request_id"] != entry["edge.request_id"] || holder["edge.route"] != "internal" {
		t.Errorf("edge 1's server span attributes %v: want the entry's request id %s", holder, entry["edge.request_id"])
	}

	// An agent without a tracing block splices: it makes no span and parses nothing, and neither
	// does a holder that splices another edge's request. The upstream's parent is then the client
	// span of the edge that wrote the request: "tunnel" at the holder, "edge peer" at the entry.
	up2 := startUpstream(t, "a2")
	c.startAgent("a2", c.edges[1].PublicURL, up2)
	c.waitHeld(t, "a2", c.edges[1], 15*time.Second)
	for _, tc := range []struct {
		via        int
		parent     string
		grandentry string
	}{{1, "tunnel", "edge gitlab_api"}, {0, "edge peer", "edge gitlab_api"}} {
		parts := upstreamTraceparent(t, c, tc.via, "a2", up2.Port)
		spans := col.WaitSpans(t, 15*time.Second, func(s []span) bool {
			for _, sp := range s {
				if sp.SpanID == parts[2] {
					return true
				}
			}
			return false
		})
		byID := map[string]span{}
		for _, sp := range spans {
			byID[sp.SpanID] = sp
		}
		parent := byID[parts[2]]
		if parent.Name != tc.parent || parent.Service != "edge" || parent.Kind != "client" {
			t.Errorf("through edge %d: the upstream's parent is %q of %s (%s), want %q of edge (client)", tc.via, parent.Name, parent.Service, parent.Kind, tc.parent)
		}
		if server := byID[parent.ParentSpanID]; !strings.HasPrefix(server.Name, tc.grandentry) {
			t.Errorf("through edge %d: the client span's parent is %q, want %q", tc.via, server.Name, tc.grandentry)
		}
	}
}

// upstreamTraceparent sends a GET to agent's upstream port through edge via and returns the
// four parts of the traceparent the upstream received.
func upstreamTraceparent(t *testing.T, c *tunnelCluster, via int, agent string, port int) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/agents/%s/proxy/%d/headers", apiBase(c.edges[via]), agent, port), nil)
	req.Header = c.authHeader()
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var seen headersAnswer
	err = json.NewDecoder(resp.Body).Decode(&seen)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s through edge %d: %d %v", agent, via, resp.StatusCode, err)
	}
	parts := strings.Split(seen.Header.Get("Traceparent"), "-")
	if len(parts) != 4 {
		t.Fatalf("%s's upstream through edge %d got traceparent %q", agent, via, seen.Header.Get("Traceparent"))
	}
	return parts
}
