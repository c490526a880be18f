package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

const testAgent = "agent-1"

// verifyTest accepts "good-<agent id>" and nothing else.
func verifyTest(_ context.Context, token string) (Identity, error) {
	id, ok := strings.CutPrefix(token, "good-")
	if !ok {
		return Identity{}, errors.New("bad token")
	}
	return Identity{AgentID: id, ProjectID: "project-7"}, nil
}

// upstream is the agent's local service.
type upstream struct {
	*httptest.Server
	port    int
	arrived chan string   // /hang, /block: the request's id arrived
	aborted chan string   // /hang: the request's context ended
	release chan struct{} // /block: closed to let blocked requests finish
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{arrived: make(chan string, 16), aborted: make(chan string, 16), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from upstream")
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("Host", r.Host)
		json.NewEncoder(w).Encode(h)
	})
	mux.HandleFunc("POST /sha256", func(w http.ResponseWriter, r *http.Request) {
		n, sum, err := hashReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d %s", n, sum)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, newPattern(n)) // no Content-Length: chunked, streamed
	})
	// /bytes and /discard are the cheap ends for benchmarks.
	chunk := make([]byte, 64<<10)
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		for ; n > 0; n -= len(chunk) {
			if _, err := w.Write(chunk[:min(n, len(chunk))]); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("POST /discard", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	})
	mux.HandleFunc("/abort", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part of it") // chunked: streamed through at once
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		u.arrived <- r.URL.Query().Get("id")
		<-r.Context().Done()
		u.aborted <- r.URL.Query().Get("id")
	})
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first part;")
		http.NewResponseController(w).Flush()
		u.arrived <- r.URL.Query().Get("id")
		select {
		case <-u.release:
			io.WriteString(w, "second part")
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	})
	u.Server = httptest.NewServer(mux)
	t.Cleanup(u.Close)
	u.port = u.Listener.Addr().(*net.TCPAddr).Port
	return u
}

// env is an edge (the tunnel Server behind a small front proxy, as the lead's proxy will be), an
// upstream, and an agent serving it.
type env struct {
	t        testing.TB
	server   *Server
	edge     *httptest.Server
	upstream *upstream
	agent    *Agent
	stop     context.CancelFunc
	stopped  chan struct{}
}

type envOptions struct {
	server func(*ServerOptions)
	agent  func(*AgentOptions)
	token  string // default "good-agent-1"
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	e := &env{t: t, upstream: newUpstream(t)}
	log := testLogger(t)
	so := ServerOptions{Verify: verifyTest, WriteError: testWriteError, Logger: log.With("side", "edge")}
	if o.server != nil {
		o.server(&so)
	}
	s, err := NewServer(so)
	if err != nil {
		t.Fatal(err)
	}
	e.server = s
	mux := http.NewServeMux()
	mux.Handle(ConnectPath, s)
	mux.Handle("/agents/{agent}/proxy/{port}/{path...}", frontProxy(s))
	e.edge = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.Close()
		e.edge.Close()
	})

	token := o.token
	if token == "" {
		token = "good-" + testAgent
	}
	ao := AgentOptions{
		WriteError:        testWriteError,
		RemoveEdgeHeaders: testRemoveEdgeHeaders,
		EdgeURL:           e.edge.URL + "/",
		Token:             func(context.Context) (string, error) { return token, nil },
		Info:              AgentInfo{Version: "v1.2.3", Commit: "abc123", PodNamespace: "ns", PodName: "agent-pod"},
		Upstreams:         AllowPorts(e.upstream.port),
		MinBackoff:        10 * time.Millisecond,
		MaxBackoff:        50 * time.Millisecond,
		Logger:            log.With("side", "agent"),
	}
	if o.agent != nil {
		o.agent(&ao)
	}
	a, err := NewAgent(ao)
	if err != nil {
		t.Fatal(err)
	}
	e.agent = a
	ctx, cancel := context.WithCancel(context.Background())
	e.stop, e.stopped = cancel, make(chan struct{})
	go func() {
		defer close(e.stopped)
		a.Run(ctx)
	}()
	t.Cleanup(e.shutdown)
	return e
}

func (e *env) shutdown() {
	e.stop()
	e.server.Close() // the agent's drain would otherwise wait for the edge
	select {
	case <-e.stopped:
	case <-time.After(10 * time.Second):
		e.t.Error("agent did not stop")
	}
}

// frontProxy is what the lead's proxy does for /-/api/v1/agents/{id}/proxy/{port}/{path}: name the
// port, send the request down the tunnel, map the errors.
func frontProxy(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent, port := r.PathValue("agent"), r.PathValue("port")
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "agent"
				pr.Out.URL.Path, pr.Out.URL.RawPath = "/"+pr.In.PathValue("path"), ""
				pr.SetXForwarded()
				pr.Out.Header.Set(PortHeader, port) // client Edge-* headers pass on purpose: the agent must drop them
			},
			Transport: s.Transport(agent),
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				switch {
				case errors.Is(err, ErrTooManyStreams):
					w.Header().Set("Retry-After", "1")
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
				case errors.Is(err, ErrAgentNotConnected):
					http.Error(w, err.Error(), http.StatusGatewayTimeout)
				default:
					http.Error(w, err.Error(), http.StatusBadGateway)
				}
			},
		}
		rp.ServeHTTP(w, r)
	})
}

// url of path on the upstream's port, through the edge.
func (e *env) url(path string) string {
	return e.urlPort(e.upstream.port, path)
}

func (e *env) urlPort(port int, path string) string {
	return fmt.Sprintf("%s/agents/%s/proxy/%d%s", e.edge.URL, testAgent, port, path)
}

// waitConnected polls until the edge holds n connections of the agent.
func (e *env) waitConnected(n int) []*Conn {
	e.t.Helper()
	var conns []*Conn
	poll.Until(e.t, 15*time.Second, fmt.Sprintf("agent has %d connection(s)", n), func() bool {
		conns = e.server.Lookup(testAgent)
		return len(conns) == n
	})
	return conns
}

// recv waits for one value on ch, with a deadline.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func get(t *testing.T, url string, header http.Header) (int, string) {
	t.Helper()
	status, body, err := fetch(url, header)
	if err != nil {
		t.Fatal(err)
	}
	return status, body
}

// fetch is get for other goroutines.
func fetch(url string, header http.Header) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// testLogger writes to the test log when -v, else nowhere.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// pattern is a deterministic byte stream of length n.
type pattern struct {
	left  int64
	state uint64
}

func newPattern(n int64) *pattern { return &pattern{left: n, state: 0x9e3779b97f4a7c15} }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	for i := range b {
		p.state ^= p.state << 13
		p.state ^= p.state >> 7
		p.state ^= p.state << 17
		b[i] = byte(p.state)
	}
	p.left -= int64(len(b))
	return len(b), nil
}

// testWriteError and testRemoveEdgeHeaders stand in for the edge's own (package proxy, which
// imports this one): the same body shape and rule.
func testWriteError(w http.ResponseWriter, status int, cause, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": cause, "message": message})
}

func testRemoveEdgeHeaders(h http.Header) {
	for k := range h {
		if len(k) >= 5 && strings.EqualFold(strings.ReplaceAll(k[:5], "_", "-"), "edge-") {
			delete(h, k)
		}
	}
}
