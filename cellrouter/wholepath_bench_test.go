package cellrouter

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/engine"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// BenchmarkWholePath is one client's GET of 1 KiB through the engine, the front (access log
// on), the router and the cell path to a loopback cell that answers from memory: edge's
// allocations per request are its allocs/op (the client and the cell allocate nothing). The
// direct path and ReverseProxy run side by side.
func BenchmarkWholePath(b *testing.B) {
	b.Run("direct", func(b *testing.B) { wholePath(b, false) })
	b.Run("reverse_proxy", func(b *testing.B) { wholePath(b, true) })
}

func wholePath(b *testing.B, viaProxy bool) {
	answer := "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nDate: Sat, 28 Nov 2026 08:00:00 GMT\r\nContent-Length: 1024\r\n\r\n" + strings.Repeat("x", 1024)
	cell := startMemoryCell(b, []byte(answer))
	p := newRouter(b, []discovery.Cell{{ID: 1, URL: cell, Legacy: true}, {ID: 2, URL: deadURL()}}, nil)
	if viaProxy {
		p.inline = nil
	}
	// The front as the server makes it: every request counted by route.
	fm, err := front.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	fr := frontFor(b, p, front.Options{Metrics: fm}, nil)
	fr.UseAccessLog(front.NewAccessLog(io.Discard, "", true))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := engine.New(engine.Options{Handler: fr, Fallback: &http.Server{}})
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /bytes?n=1024 HTTP/1.1\r\nHost: 127.0.0.1:18080\r\nUser-Agent: wrk\r\n\r\n")
	// The first answer is read as a client reads it; the others, of the same length, whole.
	var first bytes.Buffer
	c.Write(req)
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(c, &first)), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%v %v", resp, err)
	}
	if n, _ := io.Copy(io.Discard, resp.Body); n != 1024 {
		b.Fatalf("body of %d bytes", n)
	}
	buf := make([]byte, first.Len())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// startMemoryCell answers every request on every connection with answer.
func startMemoryCell(tb testing.TB, answer []byte) *url.URL {
	addr := testnet.ServeRaw(tb, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) <= 2 {
					break
				}
			}
			c.Write(answer)
		}
	})
	u, _ := url.Parse("http://" + addr)
	return u
}
