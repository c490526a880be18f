package integration

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// upstream is what an agent serves: an HTTP echo and WebSocket echo server on 127.0.0.1. Every
// answer carries X-Upstream with the agent id it belongs to, so a test sees which agent served.
//
//	/headers         the request's headers, Host and path as JSON
//	/echo            the request body back
//	/upload          {"sha256": ..., "bytes": ...} of the request body
//	/download?n=&seed=  n bytes of generatedStream(seed)
//	/ws              WebSocket: every message back, same type
//	/slow            answers "done" once the test calls releaseSlow (at the latest when it ends)
//	/hold            blocks until the request's context ends (or 20 s), reported on held
//	/raw/...         the request URI exactly as it arrived
//	/page            an HTML page whose script opens a WebSocket to /ws on its own host
type upstream struct {
	agent string
	srv   *httptest.Server
	Port  int
	held  chan heldRequest
	slow  atomic.Int32 // /slow requests that arrived

	releaseOnce sync.Once
	release     chan struct{} // closed by releaseSlow
}

// releaseSlow lets every /slow request, in flight or to come, answer.
func (u *upstream) releaseSlow() { u.releaseOnce.Do(func() { close(u.release) }) }

// heldRequest is a /hold request: entered when it arrives, then canceled or not when it ends.
type heldRequest struct {
	entered  bool
	canceled bool
}

// headersAnswer is /headers' answer.
type headersAnswer struct {
	Agent  string      `json:"agent"`
	Host   string      `json:"host"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
}

// uploadAnswer is /upload's answer.
type uploadAnswer struct {
	Agent  string `json:"agent"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

func startUpstream(t *testing.T, agent string) *upstream {
	t.Helper()
	u := &upstream{agent: agent, held: make(chan heldRequest, 16), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, headersAnswer{Agent: agent, Host: r.Host, Path: r.URL.Path, Header: r.Header})
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, r.Body)
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, uploadAnswer{Agent: agent, SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n})
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		n, err1 := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		seed, err2 := strconv.ParseUint(r.URL.Query().Get("seed"), 10, 64)
		if err1 != nil || err2 != nil {
			http.Error(w, "want n and seed", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		io.CopyN(w, generatedStream(seed), n)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		echoWebSocket(r.Context(), c)
	})
	mux.HandleFunc("/set-cookies", func(w http.ResponseWriter, r *http.Request) {
		for _, v := range appSetCookies {
			w.Header().Add("Set-Cookie", v)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><p id="set">set</p>`)
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, workspacePage)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		u.slow.Add(1)
		select {
		case <-r.Context().Done():
		case <-u.release:
			io.WriteString(w, "done")
		}
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		u.held <- heldRequest{entered: true}
		select {
		case <-r.Context().Done():
			u.held <- heldRequest{canceled: true}
		case <-time.After(20 * time.Second):
			u.held <- heldRequest{}
		}
	})
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", agent)
		if strings.HasPrefix(r.RequestURI, "/raw/") {
			io.WriteString(w, r.RequestURI) // before any mux could clean it
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	t.Cleanup(u.releaseSlow) // before Close, which waits for the handlers
	_, port, _ := net.SplitHostPort(u.srv.Listener.Addr().String())
	u.Port, _ = strconv.Atoi(port)
	return u
}

func echoWebSocket(ctx context.Context, c *websocket.Conn) {
	c.SetReadLimit(1 << 20)
	for {
		typ, r, err := c.Reader(ctx)
		if err != nil {
			return
		}
		w, err := c.Writer(ctx, typ)
		if err != nil {
			return
		}
		if _, err := io.Copy(w, r); err != nil {
			return
		}
		if err := w.Close(); err != nil {
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// generatedStream is an endless deterministic stream of pseudo-random bytes: both ends of a
// transfer can make it, so a 50 MiB body is never held in memory.
func generatedStream(seed uint64) io.Reader {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	return rand.NewChaCha8(key)
}

// workspacePage is a workspace app's page: #ready shows once its WebSocket is open; echo(text)
// sends a message and resolves with the answer; wsClosed resolves when the socket closes.
const workspacePage = `<!doctype html><title>workspace</title><h1 id="title">workspace app</h1>
<p id="ready" style="display:none">ready</p>
<script>
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
const waiting = [];
let closedResolve;
window.wsClosed = new Promise(r => closedResolve = r);
ws.onopen = () => { document.getElementById("ready").style.display = "block"; };
ws.onmessage = (e) => { const w = waiting.shift(); if (w) w(e.data); };
ws.onclose = (e) => { closedResolve("closed " + e.code); };
window.echo = (text) => new Promise(r => { waiting.push(r); ws.send(text); });
</script>
`
