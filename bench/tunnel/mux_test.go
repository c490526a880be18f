package tunnelbench

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/net/http2"
)

const bigBody = 10 << 20

// roundTripper is what each candidate gives the edge: a way to send one request to the agent.
type setup func(tb testing.TB, h http.Handler) http.RoundTripper

// handler is the agent's upstream: a tiny answer, a 10 MiB download, and an upload sink.
func handler() http.Handler {
	big := make([]byte, bigBody)
	rand.Read(big)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		w.Write(big)
	})
	mux.HandleFunc("POST /sink", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, strconv.FormatInt(n, 10))
	})
	return mux
}

// tcpPair gives the edge's and the agent's ends of one real loopback TCP connection.
func tcpPair() (edge, agent net.Conn, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	agent, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	return <-accepted, agent, nil
}

// mustPair is linkPair for the benchmark goroutine; both ends close with the benchmark.
func mustPair(tb testing.TB, oneWay time.Duration) (edge, agent net.Conn) {
	edge, agent, err := linkPair(oneWay)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { edge.Close(); agent.Close() })
	return edge, agent
}

// direct: the edge dials the agent's upstream itself over loopback (the baseline), through the
// same delaying link as the tunnels when oneWay > 0; keep-alive connections, as a proxy has.
func direct(oneWay time.Duration) setup {
	return func(tb testing.TB, h http.Handler) http.RoundTripper {
		ln := &chanListener{conns: make(chan net.Conn), done: make(chan struct{})}
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		tr := &http.Transport{
			DialContext: func(context.Context, string, string) (net.Conn, error) {
				edge, agent, err := linkPair(oneWay)
				if err != nil {
					return nil, err
				}
				ln.conns <- agent
				return edge, nil
			},
			MaxIdleConnsPerHost: 64,
			DisableCompression:  true,
		}
		tb.Cleanup(func() { tr.CloseIdleConnections(); srv.Close() })
		return tr
	}
}

// chanListener hands connections made elsewhere to an http.Server.
type chanListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// yamuxSetup: the agent is the yamux client (it dialed), serves HTTP/1.1 on each stream the edge
// opens; the edge's http.Transport dials by opening a stream.
func yamuxSetup(window uint32, keepAlive bool, oneWay time.Duration) setup {
	return func(tb testing.TB, h http.Handler) http.RoundTripper {
		edgeConn, agentConn := mustPair(tb, oneWay)
		cfg := yamux.DefaultConfig()
		cfg.LogOutput = io.Discard
		cfg.MaxStreamWindowSize = window
		agent, err := yamux.Client(agentConn, cfg)
		if err != nil {
			tb.Fatal(err)
		}
		edge, err := yamux.Server(edgeConn, cfg)
		if err != nil {
			tb.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(agent)
		tr := &http.Transport{
			DialContext:         func(context.Context, string, string) (net.Conn, error) { return edge.Open() },
			DisableKeepAlives:   !keepAlive,
			MaxIdleConnsPerHost: 64,
			DisableCompression:  true,
		}
		tb.Cleanup(func() { tr.CloseIdleConnections(); edge.Close(); agent.Close() })
		return tr
	}
}

// h2Setup: HTTP/2 reversed: the edge is the HTTP/2 client on the connection the agent dialed, the
// agent serves HTTP/2 on it.
func h2Setup(oneWay time.Duration) setup {
	return func(tb testing.TB, h http.Handler) http.RoundTripper {
		edgeConn, agentConn := mustPair(tb, oneWay)
		srv := &http2.Server{MaxUploadBufferPerConnection: 16 << 20, MaxUploadBufferPerStream: 16 << 20}
		go srv.ServeConn(agentConn, &http2.ServeConnOpts{Handler: h})
		cc, err := (&http2.Transport{}).NewClientConn(edgeConn)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cc.Close() })
		return cc
	}
}

type candidate struct {
	name  string
	setup setup
}

func candidates() []candidate {
	var cs []candidate
	for _, rtt := range []time.Duration{0, 10 * time.Millisecond} {
		oneWay := rtt / 2
		prefix := "rtt=" + rtt.String() + "/"
		cs = append(cs,
			candidate{prefix + "direct", direct(oneWay)},
			candidate{prefix + "yamux-256KiB-per-request", yamuxSetup(256<<10, false, oneWay)},
			candidate{prefix + "yamux-16MiB-per-request", yamuxSetup(16<<20, false, oneWay)},
			candidate{prefix + "yamux-256KiB-keepalive", yamuxSetup(256<<10, true, oneWay)},
			candidate{prefix + "yamux-1MiB-keepalive", yamuxSetup(1<<20, true, oneWay)},
			candidate{prefix + "yamux-4MiB-keepalive", yamuxSetup(4<<20, true, oneWay)},
			candidate{prefix + "yamux-16MiB-keepalive", yamuxSetup(16<<20, true, oneWay)},
			candidate{prefix + "h2-reversed", h2Setup(oneWay)},
		)
	}
	return cs
}

func do(tb testing.TB, rt http.RoundTripper, req *http.Request) int64 {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		tb.Fatalf("status %d, err %v", resp.StatusCode, err)
	}
	return n
}

func BenchmarkSmallRequests(b *testing.B) {
	for _, c := range candidates() {
		b.Run(c.name, func(b *testing.B) {
			rt := c.setup(b, handler())
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", "http://agent/small", nil)
					do(b, rt, req)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

func BenchmarkDownload10MiB(b *testing.B) {
	for _, c := range candidates() {
		b.Run(c.name, func(b *testing.B) {
			rt := c.setup(b, handler())
			b.SetBytes(bigBody)
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest("GET", "http://agent/big", nil)
				if n := do(b, rt, req); n != bigBody {
					b.Fatalf("got %d bytes", n)
				}
			}
		})
	}
}

func BenchmarkUpload10MiB(b *testing.B) {
	body := make([]byte, bigBody)
	for _, c := range candidates() {
		b.Run(c.name, func(b *testing.B) {
			rt := c.setup(b, handler())
			b.SetBytes(bigBody)
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest("POST", "http://agent/sink", &sliceReader{b: body})
				req.ContentLength = bigBody
				do(b, rt, req)
			}
		})
	}
}

// sliceReader avoids bytes.Reader's WriterTo, so every candidate copies through the same path.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
