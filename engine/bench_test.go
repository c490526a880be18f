package engine

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkServe is one GET and its 1 KiB answer on a kept-alive loopback connection, served by
// the engine and by net/http side by side; the client reads raw bytes, so the allocations are
// the server's.
func BenchmarkServe(b *testing.B) {
	answer := make([]byte, 1024)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	for _, srv := range []struct {
		name  string
		serve func(net.Listener)
		stop  func()
	}{
		{name: "engine"},
		{name: "net-http"},
	} {
		b.Run(srv.name, func(b *testing.B) {
			ln := listen(b)
			fb := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
			if srv.name == "engine" {
				s := New(Options{Handler: h, Fallback: fb})
				go s.Serve(ln)
				defer s.Close()
			} else {
				go fb.Serve(ln)
				defer fb.Close()
			}
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := []byte("GET /api/v4/runners/router/discovery HTTP/1.1\r\nHost: edge\r\nUser-Agent: gitlab-runner 17.11\r\nAccept: */*\r\n\r\n")
			br := bufio.NewReaderSize(c, 8<<10)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if err := readAnswer(br, len(answer)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// readAnswer reads one answer head (up to its blank line) and a body of n bytes.
func readAnswer(br *bufio.Reader, n int) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) == 2 {
			break
		}
	}
	_, err := br.Discard(n)
	if err == nil {
		return nil
	}
	return io.ErrUnexpectedEOF
}
