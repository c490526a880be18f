package cellrouter

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/internal/testkit/testnet"
	"gitlab.com/edge/edge/wire"
)

// recordingCell answers each request with the next of answers and keeps the bytes it read.
type recordingCell struct {
	url     *url.URL
	mu      sync.Mutex
	seen    [][]byte
	answers chan string
}

func newRecordingCell(t *testing.T) *recordingCell {
	t.Helper()
	c := &recordingCell{answers: make(chan string, 1)}
	c.url, _ = url.Parse("http://" + testnet.ServeRaw(t, c.serve))
	return c
}

func (c *recordingCell) serve(conn net.Conn) {
	var raw bytes.Buffer
	br := bufio.NewReader(io.TeeReader(conn, &raw))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		c.mu.Lock()
		c.seen = append(c.seen, bytes.Clone(raw.Bytes()[:raw.Len()-br.Buffered()]))
		c.mu.Unlock()
		raw.Reset()
		answer := <-c.answers
		io.WriteString(conn, answer)
		if !strings.Contains(answer, "Content-Length") && !strings.Contains(answer, "chunked") &&
			!strings.HasPrefix(answer, "HTTP/1.1 204") && !strings.HasPrefix(answer, "HTTP/1.1 304") {
			return // read to the end
		}
	}
}

func (c *recordingCell) last() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) == 0 {
		return nil
	}
	return c.seen[len(c.seen)-1]
}

// volatile are what differs between any two requests: the request id edge makes, the date.
var volatile = regexp.MustCompile(`(?m)^(X-Request-Id|Date): .*\r\n`)

type directFixture struct {
	p    *Router
	cell *recordingCell
	addr string
}

func newDirectFixture(t *testing.T, preserveHost bool) *directFixture {
	cell := newRecordingCell(t)
	pk := wire.NewParking(nil)
	p := newRouter(t, []discovery.Cell{{ID: 1, URL: cell.url, Legacy: true, PreserveHost: preserveHost}, {ID: 2, URL: deadURL()}},
		func(o *Options) { o.Parking = pk })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: frontFor(t, p, front.Options{}, nil)}
	go srv.Serve(pk.Listener(ln))
	t.Cleanup(func() { srv.Close() })
	return &directFixture{p: p, cell: cell, addr: ln.Addr().String()}
}

// exchange sends raw to edge on a new connection, with the cell answering answer; it returns
// what the client and the cell read, and whether ReverseProxy carried the request.
func (f *directFixture) exchange(t *testing.T, viaProxy bool, raw, answer string) (client, cell string, proxied bool) {
	t.Helper()
	inline := f.p.inline
	if viaProxy {
		f.p.inline = nil
	}
	defer func() { f.p.inline = inline }()
	for _, a := range f.p.targets[1].addrs {
		for _, rp := range []*httputil.ReverseProxy{a.plain, a.parker} {
			rewrite := rp.Rewrite
			rp.Rewrite = func(pr *httputil.ProxyRequest) { proxied = true; rewrite(pr) }
			defer func() { rp.Rewrite = rewrite }()
		}
	}
	f.cell.answers <- answer
	conn, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, raw)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got bytes.Buffer
	br := bufio.NewReader(io.TeeReader(conn, &got))
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	io.Copy(io.Discard, resp.Body)
	select {
	case <-f.cell.answers: // the cell never read this request
	default:
	}
	seen := string(f.cell.last())
	return volatile.ReplaceAllString(got.String()[:got.Len()-br.Buffered()], ""), volatile.ReplaceAllString(seen, ""), proxied
}

// Requests edge writes itself reach the cell byte for byte as ReverseProxy sends them; the rest
// still go through it, and are the same too.
func TestDirectSendsWhatReverseProxySends(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	body := strings.Repeat("0123456789abcdef", 32)
	cases := []struct {
		raw    string
		direct bool
	}{
		{"GET /api/v4/projects HTTP/1.1\r\nHost: edge\r\n\r\n", true},
		{"GET /api/v4/projects?a=1&b=%41&c HTTP/1.1\r\nHost: edge\r\nUser-Agent: gitlab-runner 17.0\r\n\r\n", true},
		{"GET /a%2Fb/%41/c%20d?x= HTTP/1.1\r\nHost: edge\r\n\r\n", true},
		{"GET /x? HTTP/1.1\r\nHost: edge\r\n\r\n", true},
		{"POST /api/v4/projects/1/issues HTTP/1.1\r\nHost: edge\r\nContent-Type: application/octet-stream\r\nContent-Length: 512\r\n\r\n" + body, true},
		{"POST /x HTTP/1.1\r\nHost: edge\r\nContent-Length: 0\r\n\r\n", true},
		{"PUT /x HTTP/1.1\r\nHost: edge\r\nContent-Length: 0\r\n\r\n", true},
		{"DELETE /x HTTP/1.1\r\nHost: edge\r\nContent-Length: 0\r\n\r\n", true},
		{"DELETE /x HTTP/1.1\r\nHost: edge\r\n\r\n", true},
		{"HEAD /x HTTP/1.1\r\nHost: edge\r\n\r\n", true},
		{"OPTIONS /x HTTP/1.1\r\nHost: edge\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nConnection: X-Drop, keep-alive\r\nX-Drop: 1\r\nKeep-Alive: 300\r\nX-Keep: 2\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nConnection: x-real-ip\r\nX-Real-Ip: 5.6.7.8\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nX-Real-Ip: 5.6.7.8\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nTe: trailers, deflate\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nTe: deflate\r\nTrailer: X\r\nProxy-Authorization: Basic eA==\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nX-Forwarded-For: 1.2.3.4\r\nX-Forwarded-Host: a\r\nX-Forwarded-Proto: https\r\nForwarded: for=1.2.3.4\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nUser-Agent: a\r\nUser-Agent: b\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nUser-Agent:\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nx-lower: 1\r\nX-LOWER: 2\r\naccept: */*\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n", true},
		{"GET /x HTTP/1.0\r\nHost: edge\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: EDGE.example:8080\r\n\r\n", true},
		{"POST /api/v4/jobs/request HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\nContent-Length: 54\r\n\r\n{\"token\":\"glrt-direct-runner-00001\",\"last_update\":\"x\"}", true},
		{"POST /api/v4/jobs/request HTTP/1.1\r\nHost: edge\r\nJob-Router-Token: x\r\nContent-Length: 0\r\n\r\n", true},
		{"GET /x?a=1;b=2 HTTP/1.1\r\nHost: edge\r\n\r\n", false},
		{"GET /x?a=%zz HTTP/1.1\r\nHost: edge\r\n\r\n", false},
		{"POST /x HTTP/1.1\r\nHost: edge\r\nContent-Length: 40000\r\n\r\n" + strings.Repeat("x", 40000), false},
	}
	for _, preserve := range []bool{false, true} {
		f := newDirectFixture(t, preserve)
		for _, c := range cases {
			wantClient, wantCell, _ := f.exchange(t, true, c.raw, ok)
			gotClient, gotCell, proxied := f.exchange(t, false, c.raw, ok)
			if proxied == c.direct {
				t.Errorf("preserve host %v, %q: through ReverseProxy %v, want %v", preserve, c.raw, proxied, !c.direct)
			}
			if gotCell != wantCell {
				t.Errorf("preserve host %v, %q: the cell read\n%q\nReverseProxy sends\n%q", preserve, c.raw, gotCell, wantCell)
			}
			if gotClient != wantClient {
				t.Errorf("preserve host %v, %q: the client read\n%q\nthrough ReverseProxy\n%q", preserve, c.raw, gotClient, wantClient)
			}
		}
	}
}

// directAnswers are cell answers: those edge reads itself (direct), and those it leaves to
// net/http.
var directAnswers = []struct {
	raw    string
	direct bool
}{
	{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"id\":42}", true},
	{"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n<html><b>hi</b></htm", true},
	{"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", true},
	{"HTTP/1.1 204 No Content\r\nX-Cell: 1\r\n\r\n", true},
	{"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nEtag: \"a\"\r\n\r\n", true},
	{"HTTP/1.1 200 OK\r\nConnection: X-Foo, keep-alive\r\nX-Foo: 1\r\nKeep-Alive: timeout=5\r\nX-Bar: 2\r\nContent-Length: 2\r\n\r\nok", false},
	{"HTTP/1.1 200 OK\r\nProxy-Authenticate: Basic\r\nUpgrade: h2c\r\nTe: x\r\nContent-Length: 2\r\n\r\nok", true},
	{"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", true},
	{"HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nSet-Cookie: b=2\r\nx-request-id: cell\r\nContent-Length: 2\r\n\r\nok", true},
	{"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\noops\n", true},
	{"HTTP/1.1 200 OK\r\nContent-Length: 40000\r\n\r\n" + strings.Repeat("y", 40000), true},
	{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true},
	{"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nok", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\r\n\r\nread to the end", false},
	{"HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n", false},
}

// Answers edge reads itself reach the client byte for byte as ReverseProxy writes them; those
// outside h1's subset are read by net/http, on the same connection.
func TestDirectAnswersAsReverseProxyDoes(t *testing.T) {
	f := newDirectFixture(t, false)
	poll := "POST /api/v4/jobs/request HTTP/1.1\r\nHost: edge\r\nContent-Length: 0\r\n\r\n"
	for _, method := range []string{"GET", "HEAD", "POLL"} {
		for _, a := range directAnswers {
			raw := method + " /x HTTP/1.1\r\nHost: edge\r\n\r\n"
			if method == "POLL" {
				raw = poll
			}
			want, _, _ := f.exchange(t, true, raw, a.raw)
			got, _, proxied := f.exchange(t, false, raw, a.raw)
			// A HEAD's answer has no body: one "read to the end" is read as any.
			direct := a.direct || method == "HEAD" && strings.HasSuffix(a.raw, "\r\n\r\nread to the end")
			if proxied == direct {
				t.Errorf("%s, %q: read by net/http %v, want %v", method, a.raw, proxied, !direct)
			}
			// An answer net/http streams (chunked, read to the end) is framed as its reads
			// happen to come: only what it says must be the same.
			if a.direct && got != want || !a.direct && said(t, method, got) != said(t, method, want) {
				t.Errorf("%s, answer %q: the client read\n%q\nthrough ReverseProxy\n%q", method, a.raw, got, want)
			}
		}
	}
}

// Requests whose body streams, or that expect something of the connection, are ReverseProxy's.
func TestDirectLeavesStreamsToReverseProxy(t *testing.T) {
	f := newDirectFixture(t, false)
	ap := &f.p.targets[1].addrs[0]
	for _, raw := range []string{
		"POST /x HTTP/1.1\r\nHost: edge\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: edge\r\nContent-Length: 2\r\n\r\n", // not held in memory
		"GET /x HTTP/1.1\r\nHost: edge\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: edge\r\n\r\n",
	} {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if f.p.direct(ap, r) {
			t.Errorf("%q written by edge itself", raw)
		}
	}
}

// said is an answer's status and body.
func said(t *testing.T, method, raw string) string {
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.Status + "\n" + string(body)
}

// A client that leaves while its cell is slow to answer (within the exchange's quick wait, or
// past it) cancels the request: edge closes the cell's connection soon, not at the header
// timeout.
func TestDirectClientGoneCancelsASlowAnswer(t *testing.T) {
	for _, leave := range []time.Duration{10 * time.Millisecond, 300 * time.Millisecond} {
		t.Run(leave.String(), func(t *testing.T) { clientLeavesSlowAnswer(t, leave) })
	}
}

func clientLeavesSlowAnswer(t *testing.T, leave time.Duration) {
	closed := make(chan time.Duration, 1)
	addr := testnet.ServeRaw(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		start := time.Now()
		io.Copy(io.Discard, c) // until edge gives the request up
		closed <- time.Since(start)
	})
	u, _ := url.Parse("http://" + addr)
	p := newRouter(t, []discovery.Cell{{ID: 1, URL: u, Legacy: true}, {ID: 2, URL: deadURL()}}, nil)
	edgeLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: frontFor(t, p, front.Options{}, nil)}
	go srv.Serve(edgeLn)
	t.Cleanup(func() { srv.Close() })
	conn, err := net.Dial("tcp", edgeLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: edge\r\n\r\n")
	time.Sleep(leave)
	conn.Close()
	select {
	case d := <-closed:
		if d > 2*time.Second {
			t.Errorf("the cell's connection closed %v after the request, want soon after the client left", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cell's connection stayed open after the client left")
	}
}
