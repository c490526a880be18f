package tunnel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// spliceEnv is an env whose edge and agent metrics are kept, to tell which path served.
type spliceEnv struct {
	*env
	edgeReg, agentReg *prometheus.Registry
}

func newSpliceEnv(t *testing.T, agent func(*AgentOptions)) spliceEnv {
	return newSpliceEnvWith(t, nil, agent)
}

func newSpliceEnvWith(t *testing.T, server func(*ServerOptions), agent func(*AgentOptions)) spliceEnv {
	se := spliceEnv{edgeReg: prometheus.NewRegistry(), agentReg: prometheus.NewRegistry()}
	se.env = newEnv(t, envOptions{
		server: func(o *ServerOptions) {
			o.Metrics = se.edgeReg
			if server != nil {
				server(o)
			}
		},
		agent: func(o *AgentOptions) {
			o.Metrics = se.agentReg
			if agent != nil {
				agent(o)
			}
		},
	})
	return se
}

// metric reads a counter or gauge by name, and by one label's value when label is not "".
func metric(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == label && l.GetValue() == value)
			}
			if !match {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func (se spliceEnv) spliceStreams(t *testing.T, result string) float64 {
	return metric(t, se.edgeReg, "edge_tunnel_splice_streams_total", "result", result)
}

func (se spliceEnv) agentRequests(t *testing.T, result string) float64 {
	return metric(t, se.agentReg, "edge_agent_requests_total", "result", result)
}

// agentStreams is how many streams the agent serves: open splice streams, or requests in flight.
func (se spliceEnv) agentStreams(t *testing.T) float64 {
	return metric(t, se.agentReg, "edge_agent_streams", "", "")
}

// One splice stream carries request after request: the agent parses none of them.
func TestSpliceStreamIsKeptAlive(t *testing.T) {
	se := newSpliceEnv(t, nil)
	c := se.waitConnected(1)[0]
	if !c.Info().Has(FeatureSplice) {
		t.Fatalf("agent features: got %v, want %s", c.Info().Features, FeatureSplice)
	}
	for i := range 10 {
		if status, body := get(t, se.url("/hello"), nil); status != http.StatusOK || body != "hello from upstream" {
			t.Fatalf("request %d: got %d %q", i, status, body)
		}
	}
	if got := se.spliceStreams(t, "ok"); got != 1 {
		t.Errorf("splice streams opened for 10 requests one after another: got %v, want 1", got)
	}
	if got := se.agentRequests(t, "splice"); got != 1 {
		t.Errorf("agent: splice streams served: got %v, want 1", got)
	}
	if got := se.agentRequests(t, "ok"); got != 0 {
		t.Errorf("agent: requests it proxied itself: got %v, want 0", got)
	}
	if got := se.agentStreams(t); got != 1 {
		t.Errorf("agent: open streams with the splice stream idle: got %v, want 1", got)
	}
}

// The upstream sees what the per-request path sent it: the client's Host, the edge's
// X-Forwarded-*, the path as sent; no Edge-* header, no Authorization, no Forwarded.
func TestSpliceRequestAsBefore(t *testing.T) {
	for _, perRequest := range []bool{false, true} {
		t.Run(fmt.Sprintf("per request %v", perRequest), func(t *testing.T) {
			se := newSpliceEnv(t, func(o *AgentOptions) { o.PerRequest = perRequest })
			se.waitConnected(1)
			req, _ := http.NewRequest(http.MethodGet, se.url("/headers"), nil)
			req.Header = http.Header{"Authorization": {"Bearer x"}, "Edge_Cell": {"1"}, "EDGE-THING": {"2"},
				"Forwarded": {"for=1.2.3.4"}, "X-Kept": {"k"}}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var got http.Header
			err = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for k := range got {
				if strings.HasPrefix(strings.ToLower(strings.ReplaceAll(k, "_", "-")), "edge-") || k == "Authorization" || k == "Forwarded" {
					t.Errorf("upstream got %s: %q", k, got[k])
				}
			}
			host := strings.TrimPrefix(se.edge.URL, "http://")
			if got.Get("Host") != host || got.Get("X-Kept") != "k" || got.Get("X-Forwarded-Host") != host || got.Get("X-Forwarded-For") != "127.0.0.1" {
				t.Errorf("upstream headers: got %v, want Host and X-Forwarded-Host %s, X-Forwarded-For 127.0.0.1, X-Kept", got, host)
			}
			if streams := se.spliceStreams(t, "ok"); (streams == 1) == perRequest {
				t.Errorf("splice streams: got %v with PerRequest %v", streams, perRequest)
			}
		})
	}
}

// A port the agent does not serve is refused when the stream opens, with the answer the
// per-request path gives; so is an upstream the agent cannot reach.
func TestSpliceRefusals(t *testing.T) {
	se := newSpliceEnv(t, nil)
	se.waitConnected(1)
	status, body := get(t, se.urlPort(1, "/hello"), nil)
	if status != http.StatusForbidden || !strings.Contains(body, `"port_not_allowed"`) {
		t.Errorf("port not allowed: got %d %q, want 403 port_not_allowed", status, body)
	}
	if got := se.spliceStreams(t, "refused"); got != 1 {
		t.Errorf("refused splice streams: got %v, want 1", got)
	}
	// A request with a body takes the transport's other way; refused the same.
	resp, err := http.Post(se.urlPort(1, "/sha256"), "text/plain", io.NopCloser(strings.NewReader("streamed body")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"port_not_allowed"`) {
		t.Errorf("POST to a port not allowed: got %d %q, want 403 port_not_allowed", resp.StatusCode, b)
	}
	if got := se.spliceStreams(t, "refused"); got != 2 {
		t.Errorf("refused splice streams: got %v, want 2", got)
	}
	se.upstream.Close()
	status, body = get(t, se.url("/hello"), nil)
	if status != http.StatusBadGateway || !strings.Contains(body, `"upstream_unreachable"`) {
		t.Errorf("upstream down: got %d %q, want 502 upstream_unreachable", status, body)
	}
	if got := se.spliceStreams(t, "refused"); got != 3 {
		t.Errorf("refused splice streams: got %v, want 3", got)
	}
	if got := se.agentRequests(t, "ok"); got != 0 {
		t.Errorf("agent: requests it proxied itself: got %v, want 0", got)
	}
	poll.Until(t, 15*time.Second, "no stream open at the agent", func() bool { return se.agentStreams(t) == 0 })
}

// A client that goes away mid-body ends its splice stream and the upstream connection with it.
func TestSpliceClientGoneMidBody(t *testing.T) {
	se := newSpliceEnv(t, nil)
	se.waitConnected(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, se.url("/block?id=b1"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("first part;"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first part;" {
		t.Fatalf("first part: got %q %v", first, err)
	}
	recv(t, se.upstream.arrived, "the upstream to send the first part")
	cancel()
	resp.Body.Close()
	poll.Until(t, 15*time.Second, "the splice stream closed at the agent", func() bool { return se.agentStreams(t) == 0 })
	poll.Until(t, 15*time.Second, "stream released at the edge", func() bool { return se.server.inflight(testAgent) == 0 })
	// The upstream's handler still waits for release: its connection is gone, so its write fails.
	close(se.upstream.release)
	if status, body := get(t, se.url("/hello"), nil); status != http.StatusOK || body != "hello from upstream" {
		t.Errorf("next request: got %d %q", status, body)
	}
	if got := se.spliceStreams(t, "ok"); got != 2 {
		t.Errorf("splice streams: got %v, want 2 (the first one closed with its request)", got)
	}
}

// A draining connection closes its idle splice streams at once; one with a request in flight
// stays until the answer is read, and the connection closes after it.
func TestSpliceDrainClosesIdleStreams(t *testing.T) {
	se := newSpliceEnv(t, nil)
	c := se.waitConnected(1)[0]
	done := make(chan string, 1)
	go func() {
		_, body, _ := fetch(se.url("/block?id=d1"), nil)
		done <- body
	}()
	recv(t, se.upstream.arrived, "request in flight")
	if status, _ := get(t, se.url("/hello"), nil); status != http.StatusOK { // a second stream, now idle
		t.Fatalf("second request: got %d", status)
	}
	if got := se.agentStreams(t); got != 2 {
		t.Fatalf("agent streams: got %v, want 2", got)
	}
	c.retire()
	poll.Until(t, 15*time.Second, "the idle splice stream closed", func() bool { return se.agentStreams(t) == 1 })
	select {
	case <-c.Done():
		t.Fatal("the connection closed with a request in flight")
	default:
	}
	close(se.upstream.release)
	if body := recv(t, done, "the request in flight"); body != "first part;second part" {
		t.Errorf("request in flight: got %q", body)
	}
	recv(t, c.Done(), "the connection closed once idle")
}

// An agent that keeps the per-request path (an older one, or one with tracing) names no
// feature and is served as before; Splice says so.
func TestPerRequestAgent(t *testing.T) {
	se := newSpliceEnv(t, func(o *AgentOptions) { o.PerRequest = true })
	c := se.waitConnected(1)[0]
	if len(c.Info().Features) != 0 {
		t.Errorf("features: got %v, want none", c.Info().Features)
	}
	for range 3 {
		if status, _ := get(t, se.url("/hello"), nil); status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
	}
	if got := se.agentRequests(t, "ok"); got != 3 {
		t.Errorf("agent: requests proxied: got %v, want 3", got)
	}
	if got := se.spliceStreams(t, "ok"); got != 0 {
		t.Errorf("splice streams: got %v, want 0", got)
	}
	if _, err := se.server.Splice(context.Background(), testAgent, "", se.upstream.port); !errors.Is(err, ErrNoSplice) {
		t.Errorf("Splice: got %v, want ErrNoSplice", err)
	}
	if _, err := se.server.Splice(context.Background(), testAgent, c.ID(), se.upstream.port); !errors.Is(err, ErrNoSplice) {
		t.Errorf("Splice on the named connection: got %v, want ErrNoSplice", err)
	}
	// Asked for a splice stream anyway, it refuses rather than proxy the upgrade request.
	st, err := c.session.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := spliceHandshake(st, se.upstream.port); !isRefused(err, http.StatusBadRequest) {
		t.Errorf("splice stream to a per-request agent: got %v, want a 400 refusal", err)
	}
}

func isRefused(err error, status int) bool {
	var r *RefusedError
	return errors.As(err, &r) && r.StatusCode == status
}

// Splice gives a holder a raw stream to the upstream: it counts as a request in flight until
// closed, a refusal is the agent's answer, and an unknown agent or connection is not here.
func TestServerSplice(t *testing.T) {
	se := newSpliceEnv(t, nil)
	se.server.opts.MaxStreamsPerAgent = 1
	c := se.waitConnected(1)[0]
	ctx := context.Background()
	if _, err := se.server.Splice(ctx, "nobody", "", se.upstream.port); !errors.Is(err, ErrAgentNotConnected) {
		t.Errorf("unknown agent: got %v, want ErrAgentNotConnected", err)
	}
	if _, err := se.server.Splice(ctx, testAgent, "gone", se.upstream.port); !errors.Is(err, ErrConnectionGone) {
		t.Errorf("unknown connection: got %v, want ErrConnectionGone", err)
	}
	_, err := se.server.Splice(ctx, testAgent, "", 1)
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.StatusCode != http.StatusForbidden || !strings.Contains(string(refused.Body), "port_not_allowed") {
		t.Errorf("port not allowed: got %v, want a 403 refusal", err)
	}
	st, err := se.server.Splice(ctx, testAgent, c.ID(), se.upstream.port)
	if err != nil {
		t.Fatal(err)
	}
	if got := connInflight(c); got != 1 {
		t.Errorf("in flight on its connection with a held splice stream: got %d, want 1", got)
	}
	// It does not count toward MaxStreamsPerAgent: a request still goes through.
	if status, _ := get(t, se.url("/hello"), nil); status != http.StatusOK {
		t.Errorf("a request beside a held splice stream, at most 1 in flight: got %d, want 200", status)
	}
	br := bufio.NewReader(st)
	for range 2 {
		io.WriteString(st, "GET /hello HTTP/1.1\r\nHost: up\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "hello from upstream" {
			t.Errorf("through the held stream: got %d %q", resp.StatusCode, b)
		}
	}
	st.Close()
	if got := connInflight(c); got != 0 {
		t.Errorf("in flight once closed: got %d, want 0", got)
	}
}

func connInflight(c *Conn) int {
	c.server.mu.Lock()
	defer c.server.mu.Unlock()
	return c.inflight
}

// A draining connection closes the held splice streams that went quiet after an answer, not one
// whose request waits for its answer; it closes once they are all gone.
func TestServerSpliceDrain(t *testing.T) {
	se := newSpliceEnv(t, nil)
	c := se.waitConnected(1)[0]
	ctx := context.Background()
	idle, err := se.server.Splice(ctx, testAgent, "", se.upstream.port)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	io.WriteString(idle, "GET /hello HTTP/1.1\r\nHost: up\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	hang, err := se.server.Splice(ctx, testAgent, "", se.upstream.port)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(hang, "GET /hang?id=w1 HTTP/1.1\r\nHost: up\r\n\r\n")
	recv(t, se.upstream.arrived, "the waiting request at the upstream")

	c.retire()
	if !closedWithin(idle, 10*time.Second) {
		t.Fatal("the idle held stream was not closed")
	}
	select {
	case <-c.Done():
		t.Fatal("the connection closed with a request waiting for its answer")
	case <-time.After(3 * spliceQuiet):
	}
	if closedWithin(hang, 10*time.Millisecond) {
		t.Error("the held stream whose request waits was closed")
	}
	hang.Close()
	recv(t, se.upstream.aborted, "the waiting request ended with its stream")
	recv(t, c.Done(), "the connection closed once its held streams were gone")
}

// closedWithin tells whether c reaches its end (EOF or an error other than a timeout) within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// Idle splice streams do not stay open for as long as no request comes: each holds a connection
// to the upstream at the agent. Held ones quiet after an answer go too, not one whose request
// waits for its answer.
func TestSpliceIdleStreamsReaped(t *testing.T) {
	se := newSpliceEnvWith(t, func(o *ServerOptions) {
		o.spliceReap, o.heldIdleTimeout = 20*time.Millisecond, 50*time.Millisecond
	}, nil)
	se.waitConnected(1)
	if status, _ := get(t, se.url("/hello"), nil); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	poll.Until(t, 15*time.Second, "the idle splice stream closed", func() bool { return se.agentStreams(t) == 0 })

	ctx := context.Background()
	quiet, err := se.server.Splice(ctx, testAgent, "", se.upstream.port)
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := se.server.Splice(ctx, testAgent, "", se.upstream.port)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	io.WriteString(waiting, "GET /hang?id=r1 HTTP/1.1\r\nHost: up\r\n\r\n")
	recv(t, se.upstream.arrived, "the waiting request at the upstream")
	if !closedWithin(quiet, 10*time.Second) {
		t.Fatal("the quiet held stream was not closed")
	}
	if closedWithin(waiting, 10*spliceReapTestPeriod) {
		t.Error("the held stream whose request waits was closed")
	}
}

const spliceReapTestPeriod = 50 * time.Millisecond
