package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

func TestPlainRequest(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	status, body := get(t, e.url("/hello"), nil)
	if status != http.StatusOK || body != "hello from upstream" {
		t.Errorf("GET /hello: got %d %q, want 200 %q", status, body, "hello from upstream")
	}
	if got := e.agent.Status(); got.Connected != 1 || got.LastError != nil {
		t.Errorf("agent status: got %+v, want 1 connected, no error", got)
	}
}

func TestConnInfo(t *testing.T) {
	connected := make(chan ConnInfo, 1)
	e := newEnv(t, envOptions{server: func(o *ServerOptions) {
		o.OnConnect = func(c *Conn) { connected <- c.Info() }
	}})
	info := recv(t, connected, "OnConnect")
	want := ConnInfo{AgentID: testAgent, ProjectID: "project-7", AgentInfo: AgentInfo{Version: "v1.2.3", Commit: "abc123", PodNamespace: "ns", PodName: "agent-pod",
		Features: []string{FeatureSplice}}}
	if info.AgentID != want.AgentID || info.ProjectID != want.ProjectID || !reflect.DeepEqual(info.AgentInfo, want.AgentInfo) {
		t.Errorf("info: got %+v, want %+v", info, want)
	}
	if info.ConnectionID == "" || info.ConnectedAt.IsZero() {
		t.Errorf("info: got %+v, want a connection id and a time", info)
	}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	json.Unmarshal(b, &fields)
	for _, k := range []string{"agent_id", "project_id", "connection_id", "version", "commit", "pod_namespace", "pod_name", "connected_at"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("info JSON %s: no field %q", b, k)
		}
	}
	conns := e.waitConnected(1)
	if c := e.server.Conn(testAgent, info.ConnectionID); c != conns[0] {
		t.Errorf("Conn by id: got %v, want %v", c, conns[0])
	}
	if got := len(e.server.Conns()); got != 1 {
		t.Errorf("Conns: got %d, want 1", got)
	}
}

func TestHeadersNeverReachUpstream(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	status, body := get(t, e.url("/headers"), http.Header{
		"Authorization": {"Bearer secret-for-edge"},
		"Edge-Port":     {"1"},
		"Edge-Agent-Id": {"someone-else"},
		"Edge-Whatever": {"x"},
		"X-Kept":        {"yes"},
	})
	if status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (%s)", status, body)
	}
	var got http.Header
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	for k := range got {
		if strings.HasPrefix(strings.ToLower(k), "edge-") || strings.EqualFold(k, "Authorization") {
			t.Errorf("upstream got header %s: %q", k, got[k])
		}
	}
	if got.Get("X-Kept") != "yes" {
		t.Errorf("X-Kept: got %q, want %q", got.Get("X-Kept"), "yes")
	}
	if got.Get("X-Forwarded-For") == "" {
		t.Errorf("X-Forwarded-For set by the edge: got none")
	}
	if host := strings.TrimPrefix(e.edge.URL, "http://"); got.Get("Host") != host {
		t.Errorf("Host: got %q, want the client's %q", got.Get("Host"), host)
	}
}

func TestPorts(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	tests := []struct {
		name string
		port string
		want int
	}{
		{"allowed", fmt.Sprint(e.upstream.port), http.StatusOK},
		{"not allowed", "1", http.StatusForbidden},
		{"leading zero", "0" + fmt.Sprint(e.upstream.port), http.StatusBadRequest},
		{"not a number", "http", http.StatusBadRequest},
		{"too large", "65536", http.StatusBadRequest},
		{"missing", "", http.StatusBadRequest},
	}
	rt := e.server.Transport(testAgent)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, "http://agent/hello", nil)
			if tt.port != "" {
				req.Header.Set(PortHeader, tt.port)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("port %q: got %d, want %d", tt.port, resp.StatusCode, tt.want)
			}
		})
	}
}

func TestWebSocketEcho(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, strings.Replace(e.url("/ws"), "http://", "ws://", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for i := range 3 {
		msg := fmt.Sprintf("message %d", i)
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "echo: "+msg {
			t.Errorf("echo: got %q, want %q", got, "echo: "+msg)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	// The upgraded stream is released once the proxy is done with it.
	poll.Until(t, 15*time.Second, "no stream in flight after the WebSocket closed", func() bool { return e.server.inflight(testAgent) == 0 })
}

func TestLargeBodies(t *testing.T) {
	const size = 50 << 20
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	_, wantSum, _ := hashReader(newPattern(size))

	t.Run("upload", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, e.url("/sha256"), io.NopCloser(newPattern(size))) // chunked
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if want := fmt.Sprintf("%d %s", size, wantSum); string(body) != want {
			t.Errorf("upstream read: got %q, want %q", body, want)
		}
	})
	t.Run("download", func(t *testing.T) {
		resp, err := http.Get(e.url(fmt.Sprintf("/stream?n=%d", size)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, sum, err := hashReader(resp.Body)
		if err != nil || n != size || sum != wantSum {
			t.Errorf("download: got %d bytes sha256 %s (%v), want %d %s", n, sum, err, size, wantSum)
		}
	})
}

func TestClientGoneCancelsUpstream(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url("/hang?id=h1"), nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if id := recv(t, e.upstream.arrived, "request at the upstream"); id != "h1" {
		t.Fatalf("arrived: got %q, want h1", id)
	}
	cancel()
	if id := recv(t, e.upstream.aborted, "upstream request cancelled"); id != "h1" {
		t.Errorf("aborted: got %q, want h1", id)
	}
	if err := recv(t, errc, "client return"); !errors.Is(err, context.Canceled) {
		t.Errorf("client: got %v, want context.Canceled", err)
	}
	poll.Until(t, 15*time.Second, "stream released", func() bool { return e.server.inflight(testAgent) == 0 })
}

func TestUpstreamDown(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	e.upstream.Close()
	status, body := get(t, e.url("/hello"), nil)
	if status != http.StatusBadGateway || !strings.Contains(body, "could not reach its upstream") {
		t.Errorf("upstream down: got %d %q, want 502 from the agent", status, body)
	}
}

// An upstream that breaks off its answer breaks off the client's too: no truncated success.
func TestUpstreamAbortReachesClient(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitConnected(1)
	resp, err := http.Get(e.url("/abort"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil || string(b) != "part of it" {
		t.Errorf("body: got %q, %v, want the part sent and an error", b, err)
	}
	poll.Until(t, 15*time.Second, "stream released", func() bool { return e.server.inflight(testAgent) == 0 })
}
