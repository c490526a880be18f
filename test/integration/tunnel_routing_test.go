package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// tunnelBody is the size of the bodies streamed each way through the tunnels.
const tunnelBody = 50 << 20

// TestTunnelRouting: with three edges sharing Redis and agents a1 and a2 on edges 0 and 1, a
// request entering any edge reaches the right agent: plain HTTP, a WebSocket echo, 50 MiB each
// way with matching SHA-256; routing headers and Authorization never reach the upstream; a
// client that goes away cancels the upstream request.
func TestTunnelRouting(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 3)
	ups := map[string]*upstream{"a1": startUpstream(t, "a1"), "a2": startUpstream(t, "a2")}
	holders := map[string]*edgeProc{"a1": c.edges[0], "a2": c.edges[1]}
	agents := map[string]*agentProc{
		"a1": c.startAgent("a1", holders["a1"].PublicURL, ups["a1"], "--project", "7"),
		"a2": c.startAgent("a2", holders["a2"].PublicURL, ups["a2"], "--project", "7"),
	}
	c.waitHeld(t, "a1", holders["a1"], 15*time.Second)
	c.waitHeld(t, "a2", holders["a2"], 15*time.Second)

	t.Run("connections API", func(t *testing.T) {
		for _, e := range c.edges {
			for _, id := range []string{"a1", "a2"} {
				conns, err := c.connections(e, id)
				if err != nil {
					t.Fatalf("%s: %v", c.edgeName(e), err)
				}
				checkConnInfo(t, c.edgeName(e)+" "+id, conns, id, holders[id])
			}
			conns, err := c.listConnections(e, "/projects/7/agents")
			if err != nil {
				t.Fatalf("%s: %v", c.edgeName(e), err)
			}
			var ids []string
			for _, ci := range conns {
				ids = append(ids, ci.AgentID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []string{"a1", "a2"}) {
				t.Errorf("%s: project 7's agents: got %v, want a1 and a2", c.edgeName(e), ids)
			}
		}
	})

	wantDownload := sync.OnceValue(func() string {
		h := sha256.New()
		io.CopyN(h, generatedStream(1), tunnelBody)
		return hex.EncodeToString(h.Sum(nil))
	})
	for i, e := range c.edges {
		for _, id := range []string{"a1", "a2"} {
			up := ups[id]
			how := "through " + c.edgeName(holders[id])
			if e == holders[id] {
				how = "local"
			}
			t.Run(fmt.Sprintf("edge %d to %s (%s)", i, id, how), func(t *testing.T) {
				t.Run("http", func(t *testing.T) { checkEcho(t, c, e, id, up) })
				t.Run("routing headers", func(t *testing.T) { checkHeadersStripped(t, c, e, id, up) })
				t.Run("path byte for byte", func(t *testing.T) { checkRawPath(t, c, e, id, up) })
				t.Run("websocket", func(t *testing.T) { checkWebSocket(t, c, e, id, up) })
				t.Run("upload 50 MiB", func(t *testing.T) { checkUpload(t, c, e, id, up, uint64(10+i)) })
				t.Run("download 50 MiB", func(t *testing.T) { checkDownload(t, c, e, id, up, wantDownload()) })
				t.Run("client gone", func(t *testing.T) { checkClientGone(t, c, e, id, up) })
			})
		}
	}

	// Every request above, local or through another edge, reached the upstreams over splice
	// streams: the agents proxied none themselves, and each holder spliced what other edges sent.
	t.Run("spliced", func(t *testing.T) {
		for id, a := range agents {
			spliced, err1 := metricSum(a.OpsURL+"/metrics", "edge_agent_requests_total", `result="splice"`)
			proxied, err2 := metricSum(a.OpsURL+"/metrics", "edge_agent_requests_total", `result="ok"`)
			if err1 != nil || err2 != nil || spliced == 0 || proxied != 0 {
				t.Errorf("agent %s: splice streams %v, requests proxied %v (%v %v): want splice streams only", id, spliced, proxied, err1, err2)
			}
		}
		for id, h := range holders {
			if n, err := metricSum(h.OpsURL+"/metrics", "edge_internal_requests_total", `outcome="spliced"`); err != nil || n == 0 {
				t.Errorf("holder of %s: spliced connections from other edges %v (%v), want some", id, n, err)
			}
		}
	})
}

// checkConnInfo checks that conns is exactly one connection of agent id at holder.
func checkConnInfo(t *testing.T, where string, conns []agentConnInfo, id string, holder *edgeProc) {
	t.Helper()
	if len(conns) != 1 {
		t.Errorf("%s: got %d connections, want 1: %+v", where, len(conns), conns)
		return
	}
	ci := conns[0]
	if ci.AgentID != id || ci.ProjectID != "7" || ci.Edge != holder.InternalURL {
		t.Errorf("%s: got agent %q project %q edge %q, want %q 7 %q", where, ci.AgentID, ci.ProjectID, ci.Edge, id, holder.InternalURL)
	}
	if ci.Version == "" {
		t.Errorf("%s: no version: the agent's Edge-Agent-Info did not reach the edge", where)
	}
	if ci.ConnectionID == "" || ci.ConnectedAt.IsZero() || time.Since(ci.ConnectedAt) > time.Minute {
		t.Errorf("%s: connection id %q connected at %v, want an id and a recent time", where, ci.ConnectionID, ci.ConnectedAt)
	}
}

// apiBase is where the API for GitLab is on e, for trySend.
func apiBase(e *edgeProc) string { return e.PublicURL + "/-/api/v1" }

func (c *tunnelCluster) authHeader() http.Header {
	return http.Header{"Authorization": {"Bearer " + c.apiToken}}
}

// wantServedBy checks a proxied answer's status and that the upstream of agent id answered.
func wantServedBy(t *testing.T, a answer, id string) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("got %d %s, want 200", a.status, a.body)
	}
	if got := a.header.Get("X-Upstream"); got != id {
		t.Errorf("served by the upstream of: got %q, want %q", got, id)
	}
}

func checkEcho(t *testing.T, c *tunnelCluster, e *edgeProc, id string, up *upstream) {
	body := []byte("hello " + id + " from " + e.PublicURL)
	a := sendTo(t, c.client, apiBase(e), outgoing{
		method: http.MethodPost, path: proxyPath(id, up.Port, "/echo"), header: c.authHeader(), body: body,
	})
	wantServedBy(t, a, id)
	if !bytes.Equal(a.body, body) {
		t.Errorf("echo: got %q, want %q", a.body, body)
	}
}

// checkHeadersStripped sends spoofed routing headers: they neither reroute the request nor
// reach the upstream, and neither does the API JWT.
func checkHeadersStripped(t *testing.T, c *tunnelCluster, e *edgeProc, id string, up *upstream) {
	h := c.authHeader()
	other := map[string]string{"a1": "a2", "a2": "a1"}[id]
	h.Set("Edge-Agent-Id", other)
	h.Set("Edge-Port", "1")
	h.Set("Edge-Hop", "7")
	h.Set("Edge-Connection-Id", "spoofed")
	h.Set("Edge-Not-Here", "1")
	h.Set("Edge-Whatever", "x")
	h.Set("X-Custom", "kept")
	a := sendTo(t, c.client, apiBase(e), outgoing{method: http.MethodGet, path: proxyPath(id, up.Port, "/headers"), header: h})
	wantServedBy(t, a, id)
	var got headersAnswer
	if err := json.Unmarshal(a.body, &got); err != nil {
		t.Fatalf("decode: %v: %s", err, a.body)
	}
	for k := range got.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Edge-") || http.CanonicalHeaderKey(k) == "Authorization" {
			t.Errorf("the upstream got header %s", k)
		}
	}
	if got.Header.Get("X-Custom") != "kept" {
		t.Errorf("X-Custom at the upstream: got %q, want kept", got.Header.Get("X-Custom"))
	}
	if got.Path != "/headers" {
		t.Errorf("path at the upstream: got %q, want /headers", got.Path)
	}
}

func checkWebSocket(t *testing.T, c *tunnelCluster, e *edgeProc, id string, up *upstream) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(ctx, apiBase(e)+proxyPath(id, up.Port, "/ws"), &websocket.DialOptions{HTTPHeader: c.authHeader()})
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		t.Fatalf("dial: status %d: %v", status, err)
	}
	defer ws.CloseNow()
	if got := res.Header.Get("X-Upstream"); got != id {
		t.Errorf("upgraded by the upstream of: got %q, want %q", got, id)
	}
	ws.SetReadLimit(1 << 20)
	msgs := []struct {
		typ  websocket.MessageType
		data []byte
	}{
		{websocket.MessageText, []byte("hello " + id)},
		{websocket.MessageBinary, bytes.Repeat([]byte{0, 1, 2, 0xff}, 64<<10)},
		{websocket.MessageText, []byte("bye")},
	}
	for _, m := range msgs {
		if err := ws.Write(ctx, m.typ, m.data); err != nil {
			t.Fatalf("write: %v", err)
		}
		typ, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if typ != m.typ || !bytes.Equal(data, m.data) {
			t.Errorf("echo: got %v of %d bytes, want %v of %d bytes", typ, len(data), m.typ, len(m.data))
		}
	}
	if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("close: %v", err)
	}
}

// checkUpload streams 50 MiB generated on the fly; the upstream hashes what it received.
func checkUpload(t *testing.T, c *tunnelCluster, e *edgeProc, id string, up *upstream, seed uint64) {
	start := time.Now()
	a := sendTo(t, c.client, apiBase(e), outgoing{
		method: http.MethodPut, path: proxyPath(id, up.Port, "/upload"), header: c.authHeader(),
		stream: func(w io.Writer) error {
			_, err := io.CopyN(w, generatedStream(seed), tunnelBody)
			return err
		},
	})
	wantServedBy(t, a, id)
	var got uploadAnswer
	if err := json.Unmarshal(a.body, &got); err != nil {
		t.Fatalf("decode: %v: %s", err, a.body)
	}
	if got.Bytes != a.sentLen || got.SHA256 != a.sentSHA {
		t.Errorf("at the upstream: got %d bytes sha256 %s, want %d bytes sha256 %s", got.Bytes, got.SHA256, a.sentLen, a.sentSHA)
	}
	t.Logf("%d MiB up in %v", a.sentLen>>20, time.Since(start).Round(time.Millisecond))
}

// checkDownload has the upstream stream 50 MiB and hashes it as it arrives.
func checkDownload(t *testing.T, c *tunnelCluster, e *edgeProc, id string, up *upstream, want string) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.client.Do(c.apiRequest(ctx, e, http.MethodGet, proxyPath(id, up.Port, fmt.Sprintf("/download?n=%d&seed=1", tunnelBody)), nil))
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer res.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	if err != nil {
		t.Fatalf("read after %d bytes: %v", n, err)
	}
	wantServedBy(t, answer{status: res.StatusCode, header: res.Header}, id)
	if got := hex.EncodeToString(h.Sum(nil)); n != tunnelBody || got != want {
		t.Errorf("at the client: got %d bytes sha256 %s, want %d bytes sha256 %s", n, got, tunnelBody, want)
	}
	t.Logf("%d MiB down in %v", n>>20, time.Since(start).Round(time.Millisecond))
}

// checkClientGone: the upstream request ends, canceled, soon after the client disconnects.
func checkClientGone(t *testing.T, c *tunnelCluster, e *edgeProc, id string, up *upstream) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		res, err := c.client.Do(c.apiRequest(ctx, e, http.MethodGet, proxyPath(id, up.Port, "/hold"), nil))
		if err == nil {
			res.Body.Close()
			err = fmt.Errorf("got an answer: %d", res.StatusCode)
		}
		errc <- err
	}()
	select {
	case h := <-up.held:
		if !h.entered {
			t.Fatalf("the upstream reported %+v before the request entered", h)
		}
	case err := <-errc:
		t.Fatalf("the request ended before it reached the upstream: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatalf("the request did not reach the upstream in 15s")
	}
	cancel()
	<-errc
	select {
	case h := <-up.held:
		if !h.canceled {
			t.Errorf("the upstream request ended without its context done")
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the upstream request still runs 10s after the client went away")
	}
}

// checkRawPath: the rest of an API proxy path reaches the upstream as sent: encoded slashes stay
// encoded, dot segments and doubled slashes are not cleaned, no redirect.
func checkRawPath(t *testing.T, c *tunnelCluster, e *edgeProc, id string, up *upstream) {
	for _, rest := range []string{"/raw/a%2Fb/c%20d/x;y?q=1&r=%2F", "/raw/x/../y//z", "/raw/%2e%2e/%2F"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req := c.apiRequest(ctx, e, "GET", "/agents/"+id+"/proxy/"+fmt.Sprint(up.Port)+"/placeholder", nil)
		// Set the raw target directly: the client must not re-encode or clean it either.
		req.URL.Opaque = "/-/api/v1/agents/" + id + "/proxy/" + fmt.Sprint(up.Port) + strings.SplitN(rest, "?", 2)[0]
		if q := strings.SplitN(rest, "?", 2); len(q) == 2 {
			req.URL.RawQuery = q[1]
		} else {
			req.URL.RawQuery = ""
		}
		resp, err := c.client.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", rest, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK || string(body) != rest {
			t.Errorf("upstream got %d %q, want 200 %q", resp.StatusCode, body, rest)
		}
	}
}
