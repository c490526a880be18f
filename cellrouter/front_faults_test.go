package cellrouter

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// A panic on a request's handler goroutine (forced here in the cell answer's ModifyResponse)
// ends that request alone: a 502 with cause panic and the connection closed after; counted once;
// the next request on a new connection is served.
func TestRequestPanicIs502AndCounted(t *testing.T) {
	fired := false
	cell := newScriptedCell(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") })
	addr, _, g, logs := guardedFront(t, cell.url, deadURL(), func(p *Router) {
		p.inline = nil // the answer through ReverseProxy, where the panic is forced
		for _, a := range p.targets[1].addrs {
			a.plain.ModifyResponse = func(*http.Response) error {
				if !fired {
					fired = true
					panic("forced in a request's handler")
				}
				return nil
			}
		}
	})
	resp, body := rawGet(t, addr, "/api/v4/runners/verify")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, `"error":"panic"`) || !resp.Close {
		t.Errorf("got %d %q (close %v), want 502 panic with the connection closed", resp.StatusCode, body, resp.Close)
	}
	if n := g.Contained("request"); n != 1 {
		t.Errorf("edge_panics_total{where=request} = %v, want 1", n)
	}
	if !strings.Contains(logs.String(), "forced in a request's handler") || !strings.Contains(logs.String(), "front_faults_test.go") {
		t.Errorf("no log line with the panic and its stack: %s", logs.String())
	}
	if resp, body := rawGet(t, addr, "/api/v4/runners/verify"); resp.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("next request: %d %q", resp.StatusCode, body)
	}
}

// An answer cut mid-body by the cell (ReverseProxy's http.ErrAbortHandler) closes the client's
// connection, is no crash, and still gets its access line with the cause.
func TestAnswerCutMidBodyClosesTheConnection(t *testing.T) {
	cell := newScriptedCell(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
		io.WriteString(c, strings.Repeat("x", 40000))
		c.Close()
	})
	addr, _, g, logs := guardedFront(t, cell.url, deadURL(), nil)
	conn := runnerConn(t, addr)
	io.WriteString(conn, "GET /api/v4/runners/verify HTTP/1.1\r\nHost: edge\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil || n >= 100000 {
		t.Errorf("read %d bytes, err %v: want the body cut and the connection ended", n, err)
	}
	if n := g.Contained("request"); n != 0 {
		t.Errorf("edge_panics_total{where=request} = %v, want 0 (an abort is no crash)", n)
	}
	_ = logs
}

// A client that half-closes after its request, while the cell has not answered, gets no made-up
// answer: edge logs 499 and closes the connection (net/http would have written an empty 200).
func TestHalfCloseGetsNoMadeUpAnswer(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cell := newScriptedCell(t, func(c net.Conn) { <-release })
	addr, _, _, _ := guardedFront(t, cell.url, deadURL(), nil)
	conn := runnerConn(t, addr).(*net.TCPConn)
	io.WriteString(conn, "GET /api/v4/runners/verify HTTP/1.1\r\nHost: edge\r\n\r\n")
	poll.Until(t, 5*time.Second, "the cell has the request", func() bool { return cell.requests() == 1 })
	conn.CloseWrite()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("the client got %q, want nothing: the cell never answered", got)
	}
}

func rawGet(t *testing.T, addr, path string) (*http.Response, string) {
	t.Helper()
	conn := runnerConn(t, addr)
	io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: edge\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func deadURL() *url.URL {
	u, _ := url.Parse("http://127.0.0.1:9")
	return u
}
