package guard

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHandlerContainsAPanic: a request whose handler panics before answering gets 502 and its
// connection closes after it; one that panics mid-answer has its connection cut (the client
// reads a short body); an abort (http.ErrAbortHandler) cuts the connection and is not counted.
// The raw connection shows what the client sees: a client library would hide the close.
func TestHandlerContainsAPanic(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		check   func(t *testing.T, resp *http.Response, err error, c net.Conn)
		counted float64
	}{
		{"before the answer", func(http.ResponseWriter, *http.Request) { panic("test: crashed before answering") },
			func(t *testing.T, resp *http.Response, err error, c net.Conn) {
				if err != nil {
					t.Fatalf("read the answer: %v", err)
				}
				if resp.StatusCode != http.StatusBadGateway {
					t.Errorf("status: got %d, want 502", resp.StatusCode)
				}
				if !resp.Close {
					t.Errorf("Connection: got %q, want close", resp.Header.Get("Connection"))
				}
				if _, err := io.ReadAll(resp.Body); err != nil {
					t.Errorf("502 body: %v", err)
				}
				if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
					t.Errorf("after the 502: read %d byte(s), %v, want EOF (connection closed)", n, err)
				}
			}, 1},
		{"mid-answer", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("0123456789"))
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush through the guard's writer: %v", err)
			}
			panic("test: crashed mid-answer")
		}, func(t *testing.T, resp *http.Response, err error, _ net.Conn) {
			if err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status: got %d, want the 200 already sent", resp.StatusCode)
			}
			body, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) || string(body) != "0123456789" {
				t.Errorf("body: got %q, %v; want the 10 bytes sent, then ErrUnexpectedEOF (cut)", body, err)
			}
		}, 1},
		{"abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) },
			func(t *testing.T, resp *http.Response, err error, _ net.Conn) {
				if err == nil {
					t.Errorf("an aborted request got an answer: %d", resp.StatusCode)
				}
			}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(slog.New(slog.DiscardHandler), prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(g.Handler("ops", tc.handler))
			defer srv.Close()
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: edge\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			tc.check(t, resp, err, readerConn{c, br})
			if got := g.Contained("ops"); got != tc.counted {
				t.Errorf("edge_panics_total{where=ops}: got %v, want %v", got, tc.counted)
			}
		})
	}
}

// readerConn reads what its buffered reader holds before the connection.
type readerConn struct {
	net.Conn
	r *bufio.Reader
}

func (c readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }
