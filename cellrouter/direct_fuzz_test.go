package cellrouter

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/h1"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// FuzzDirectAgainstReverseProxy: for any answer a cell sends (and then closes), a client reads
// the same bytes from edge whether edge read the answer itself or ReverseProxy did, but the
// date and request id.
func FuzzDirectAgainstReverseProxy(f *testing.F) {
	for _, a := range directAnswers {
		f.Add([]byte(a.raw), false)
		f.Add([]byte(a.raw), true)
	}
	cell := newClosingCell(f)
	p := newRouter(f, []discovery.Cell{{ID: 1, URL: cell.url, Legacy: true}, {ID: 2, URL: deadURL()}}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv := &http.Server{Handler: frontFor(f, p, front.Options{}, nil)}
	go srv.Serve(ln)
	f.Cleanup(func() { srv.Close() })
	inline := p.inline
	var mu sync.Mutex // the fuzzer's workers share the router: one exchange at a time
	f.Fuzz(func(t *testing.T, answer []byte, head bool) {
		var r h1.Response
		if _, v := h1.ParseResponse(answer, &r, head, answerLimitsForTest); v != h1.Accept || r.Status < 200 || r.Chunked {
			return // not the direct path's to read: both go through ReverseProxy
		}
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		mu.Lock()
		defer mu.Unlock()
		read := func(viaProxy bool) string {
			p.inline = inline
			if viaProxy {
				p.inline = nil
			}
			cell.answer(answer)
			return volatile.ReplaceAllString(clientExchange(t, ln.Addr().String(), method), "")
		}
		want, got := read(true), read(false)
		if got != want {
			t.Errorf("answer %q to %s: the client read\n%q\nthrough ReverseProxy\n%q", answer, method, got, want)
		}
	})
}

var answerLimitsForTest = h1.Limits{MaxHead: 4 << 10, MaxHeaders: h1.DefaultMaxHeaders}

// clientExchange sends one request on a new connection and returns what came back before the
// connection ended (edge closes it after a cut answer) or the read deadline passed.
func clientExchange(t *testing.T, addr, method string) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, method+" /x HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	got, _ := io.ReadAll(c)
	return string(got)
}

// closingCell answers each request with the answer set last, then closes the connection.
type closingCell struct {
	url  *url.URL
	mu   sync.Mutex
	next []byte
}

func newClosingCell(tb testing.TB) *closingCell {
	c := &closingCell{}
	addr := testnet.ServeRaw(tb, func(conn net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		c.mu.Lock()
		answer := bytes.Clone(c.next)
		c.mu.Unlock()
		conn.Write(answer)
	})
	c.url, _ = url.Parse("http://" + addr)
	return c
}

func (c *closingCell) answer(b []byte) {
	c.mu.Lock()
	c.next = b
	c.mu.Unlock()
}
