package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// countingServer is an httptest server that counts the TCP connections it accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	conns := &atomic.Int64{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, conns
}

func get(t *testing.T, rt http.RoundTripper, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

func TestInlineKeepsOneConnectionForSequentialRequests(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	})
	rt := newCellTransport(time.Second, 5*time.Second)
	for i := range 20 {
		resp, err := get(t, rt, context.Background(), srv.URL+"/n")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello /n" {
			t.Fatalf("request %d: body %q", i, body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 sequential requests used %d connections, want 1", n)
	}
	if n := len(rt.idle[strings.TrimPrefix(srv.URL, "http://")]); n != 1 {
		t.Errorf("%d idle inline connections, want 1 (the requests went to the fallback?)", n)
	}
}

func TestInlineAnswerNotReadToItsEndIsNotReused(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10)
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(big)
	})
	rt := newCellTransport(time.Second, 5*time.Second)
	resp, err := get(t, rt, context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 10))
	resp.Body.Close()
	resp, err = get(t, rt, context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(body, big) {
		t.Fatalf("second answer: %d bytes (%v), want the %d sent", len(body), err, len(big))
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the half-read one must be closed", n)
	}
}

func TestInlineNeverSendsAPostTwice(t *testing.T) {
	addr, seen := testnet.FlakyCell(t)
	rt := newCellTransport(time.Second, 5*time.Second)
	rt.holdUnbuffered = true // as the long-poll transport that carries jobs/request
	post := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v4/jobs/request", nil)
		req.Body = wholeBody(`{"token":"x"}`)
		req.ContentLength = 13
		return rt.RoundTrip(req)
	}
	resp, err := post()
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if _, err := post(); err == nil {
		t.Fatal("a POST the cell dropped unanswered succeeded")
	}
	if n := seen(http.MethodPost); n != 2 {
		t.Errorf("the cell read %d POSTs, want 2 (one each, never a retry)", n)
	}
}

func TestInlineRetriesAGetOnceOnANewConnection(t *testing.T) {
	addr, seen := testnet.FlakyCell(t)
	rt := newCellTransport(time.Second, 5*time.Second)
	for i := range 2 {
		resp, err := get(t, rt, context.Background(), "http://"+addr+"/")
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if n := seen(http.MethodGet); n != 3 {
		t.Errorf("the cell read %d GETs, want 3 (the dropped one once more)", n)
	}
}

func TestInlineDropsAConnectionTheCellClosedWhileIdle(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	rt := newCellTransport(time.Second, 5*time.Second)
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.CloseClientConnections()
		for deadline := time.Now().Add(5 * time.Second); idleAlive(rt, srv.URL) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestInlineCancelEndsTheHeldRequest(t *testing.T) {
	ended := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(ended)
	})
	rt := newCellTransport(time.Second, time.Minute)
	rt.holdUnbuffered = true
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := get(t, rt, ctx, srv.URL)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled request: %v, want context.Canceled", err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the cell's request went on after the client canceled")
	}
}

func TestInlineResponseHeaderTimeoutIs504(t *testing.T) {
	for _, unbuffered := range []bool{false, true} {
		testHeaderTimeout(t, unbuffered)
	}
}

func testHeaderTimeout(t *testing.T, holdUnbuffered bool) {
	release := make(chan struct{})
	defer close(release)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	rt := newCellTransport(time.Second, 100*time.Millisecond)
	rt.holdUnbuffered = holdUnbuffered
	_, err := get(t, rt, context.Background(), srv.URL)
	if status, cause := hop.StatusOf(err); status != http.StatusGatewayTimeout || cause != "timeout" {
		t.Errorf("no answer within the timeout (unbuffered wait %v): %v maps to %d %s, want 504 timeout", holdUnbuffered, err, status, cause)
	}
}

func TestInlinePassesInformationalAnswersAndTrailers(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Trailer", "X-Sum")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		io.WriteString(w, "body")
		w.Header().Set("X-Sum", "42")
	})
	rt := newCellTransport(time.Second, 5*time.Second)
	var hints []int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if h.Get("Link") != "" {
				hints = append(hints, code)
			}
			return nil
		},
	})
	resp, err := get(t, rt, ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "body" || resp.Trailer.Get("X-Sum") != "42" {
		t.Errorf("got body %q, trailer %q; want body and X-Sum 42", body, resp.Trailer.Get("X-Sum"))
	}
	if len(hints) != 1 || hints[0] != http.StatusEarlyHints {
		t.Errorf("1xx answers seen %v, want one 103 with its Link", hints)
	}
}

func TestInlineTakesOnlyWhatItCanCarry(t *testing.T) {
	rt := newCellTransport(time.Second, time.Second)
	streamed, _ := http.NewRequest(http.MethodPost, "http://cell/", io.NopCloser(strings.NewReader("x")))
	inMemory, _ := http.NewRequest(http.MethodPost, "http://cell/", nil)
	inMemory.Body = wholeBody("x")
	partly, _ := http.NewRequest(http.MethodPost, "http://cell/", nil)
	partly.Body = partBody("x")
	expect, _ := http.NewRequest(http.MethodPost, "http://cell/", nil)
	expect.Header.Set("Expect", "100-continue")
	upgrade, _ := http.NewRequest(http.MethodGet, "http://cell/", nil)
	upgrade.Header.Set("Upgrade", "websocket")
	tlsCell, _ := http.NewRequest(http.MethodGet, "https://cell/", nil)
	plain, _ := http.NewRequest(http.MethodGet, "http://cell/", nil)
	for name, c := range map[string]struct {
		req  *http.Request
		want bool
	}{
		"no body": {plain, true}, "body in memory": {inMemory, true}, "streamed body": {streamed, false},
		"body partly read": {partly, false}, "100-continue": {expect, false}, "upgrade": {upgrade, false},
		"https cell": {tlsCell, false},
	} {
		if got := rt.takes(c.req); got != c.want {
			t.Errorf("%s: inline %v, want %v", name, got, c.want)
		}
	}
}

// idleAlive says whether the transport holds an idle connection to url that still looks open.
func idleAlive(rt *InlineTransport, url string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	conns := rt.idle[strings.TrimPrefix(url, "http://")]
	return len(conns) > 0 && conns[len(conns)-1].alive()
}

// rawCell answers every connection's first request with answer, as bytes, then closes.
func rawCell(t *testing.T, answer string) string {
	t.Helper()
	return "http://" + testnet.ServeRaw(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, answer)
		}
	})
}

func TestInlineMalformedAnswersAre502(t *testing.T) {
	for name, answer := range map[string]string{
		"not HTTP":                 "HELLO\r\n\r\n",
		"bad status":               "HTTP/1.1 2x0 OK\r\n\r\n",
		"bad content length":       "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
		"two content lengths":      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"unasked switching":        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n",
		"closed without an answer": "",
		"headers cut short":        "HTTP/1.1 200 OK\r\nContent-Le",
	} {
		rt := newCellTransport(time.Second, 5*time.Second)
		resp, err := get(t, rt, context.Background(), rawCell(t, answer))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: answer accepted (%d), want an error", name, resp.StatusCode)
			continue
		}
		if status, _ := hop.StatusOf(err); status != http.StatusBadGateway {
			t.Errorf("%s: %v maps to %d, want 502", name, err, status)
		}
	}
}

func TestInlineBodyCutShortIsAnErrorNotAReuse(t *testing.T) {
	rt := newCellTransport(time.Second, 5*time.Second)
	url := rawCell(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
	resp, err := get(t, rt, context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a body 7 bytes short: %v, want unexpected EOF", err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if n := len(rt.idle[strings.TrimPrefix(url, "http://")]); n != 0 {
		t.Errorf("%d idle connections after a broken answer, want 0", n)
	}
}

func TestInlineAnswersThatEndTheConnectionAreNotReused(t *testing.T) {
	for name, answer := range map[string]string{
		"Connection: close":                "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.0, body until the close":   "HTTP/1.0 200 OK\r\n\r\nhello",
		"HTTP/1.1 without a length, close": "HTTP/1.1 200 OK\r\n\r\nhello",
	} {
		rt := newCellTransport(time.Second, 5*time.Second)
		url := rawCell(t, answer)
		for i := range 2 {
			resp, err := get(t, rt, context.Background(), url)
			if err != nil {
				t.Fatalf("%s, request %d: %v", name, i, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != "hello" {
				t.Errorf("%s, request %d: body %q (%v), want hello", name, i, body, err)
			}
		}
		rt.mu.Lock()
		n := len(rt.idle[strings.TrimPrefix(url, "http://")])
		rt.mu.Unlock()
		if n != 0 {
			t.Errorf("%s: %d idle connections kept, want 0", name, n)
		}
	}
}

// writeCounter is a connection that counts the writes made to it.
type writeCounter struct {
	net.Conn
	writes *atomic.Int64
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func TestInlineWritesARequestAndItsHeldBodyInOneWrite(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) })
	rt := newCellTransport(time.Second, 5*time.Second)
	writes := &atomic.Int64{}
	rt.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &writeCounter{Conn: c, writes: writes}, nil
	}
	const body = `{"token":"x","last_update":"0"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v4/jobs/request", nil)
	req.Body = wholeBody(body)
	req.ContentLength = int64(len(body))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != body {
		t.Fatalf("the cell got %q, want %q", got, body)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("the request took %d writes, want 1 (head and body together)", n)
	}
}

// TestSendGoesOutWhenTheWaitExpiredFirst: on a busy machine the wait's deadline can pass before
// the poller runs the send (the poller then reports the timeout without calling it). The request
// still goes out, and the caller sees a wait that timed out after sending: an exchange then
// waits on for its answer, a poll parks, and neither loses the request nor reports 504 for it.
func TestSendGoesOutWhenTheWaitExpiredFirst(t *testing.T) {
	got := make(chan string, 1)
	addr := testnet.ServeRaw(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- req.URL.Path
		io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
	})
	rt := newCellTransport(time.Second, 5*time.Second)
	c, _, err := rt.conn(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, ok := c.plainSocket()
	if !ok {
		t.Fatal("not a plain socket")
	}
	c.SetReadDeadline(time.Unix(1, 0)) // armed, then passed before the send ran
	sent, err := c.sendAndAwait(raw, []byte("GET /late HTTP/1.1\r\nHost: cell\r\n\r\n"), nil)
	if !sent || !hop.IsTimeout(err) {
		t.Errorf("sendAndAwait = %v, %v; want sent and the wait timed out", sent, err)
	}
	select {
	case path := <-got:
		if path != "/late" {
			t.Errorf("the cell got %q, want /late", path)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request never reached the cell")
	}
}

// TestAnswerNotBegunAfterAWakeWithNothingToRead: the poller can report a socket readable that is
// not (a readiness it reports late, for bytes read before). Nothing then comes within the quick
// wait: an exchange waits on within the header timeout and reads the answer; a poll that may be
// parked is parked (errNotBegun), not failed with a 504.
func TestAnswerNotBegunAfterAWakeWithNothingToRead(t *testing.T) {
	addr := testnet.ServeRaw(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			time.Sleep(150 * time.Millisecond)
			io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}
	})
	for _, parkable := range []bool{false, true} {
		rt := newCellTransport(time.Second, 5*time.Second)
		c, _, err := rt.conn(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: cell\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "http://cell/slow", nil)
		x := &c.x
		*x = Exchange{c: c, ctx: req.Context(), start: time.Now(), quick: true, parkable: parkable}
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)) // the quick wait, as sendAndAwait left it
		err = x.readHead(req, false)
		switch {
		case parkable && !errors.Is(err, errNotBegun):
			t.Errorf("a parkable poll: %v, want errNotBegun (parked)", err)
		case !parkable && (err != nil || !x.Accepted || x.Answer.Status != http.StatusNoContent):
			t.Errorf("an exchange: %v, accepted %v, status %d; want the cell's 204", err, x.Accepted, x.Answer.Status)
		}
		c.Close()
	}
}
