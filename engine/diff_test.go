package engine

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// echo answers with what it read of the request, in shapes chosen by the path: the answers of
// the engine and of net/http to the same bytes must be the same bytes.
func echo(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s host=%s cl=%d te=%v close=%v url=%s\n", r.Method, r.RequestURI, r.Proto, r.Host, r.ContentLength, r.TransferEncoding, r.Close, r.URL)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range r.Header {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, r.Header[k])
	}
	path := r.URL.Path
	if !strings.Contains(path, "unread") {
		body, err := io.ReadAll(r.Body)
		fmt.Fprintf(&b, "body=%q err=%v\n", body, errKind(err))
	}
	if strings.Contains(path, "type") {
		w.Header().Set("Content-Type", "application/json")
	}
	if strings.Contains(path, "length") {
		w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
	}
	if strings.Contains(path, "close") {
		w.Header().Set("Connection", "close")
	}
	switch {
	case strings.Contains(path, "204"):
		w.WriteHeader(http.StatusNoContent)
	case strings.Contains(path, "304"):
		w.WriteHeader(http.StatusNotModified)
	case strings.Contains(path, "early"):
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
	}
	if strings.Contains(path, "trailer") {
		w.Header().Set("Trailer", "X-Sum")
	}
	n := 1
	if strings.Contains(path, "big") {
		n = 40
	}
	for i := range n {
		io.WriteString(w, b.String())
		if i == 0 && strings.Contains(path, "flush") {
			w.(http.Flusher).Flush()
		}
	}
	if strings.Contains(path, "trailer") {
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
	}
}

// errKind names a body's error as both servers have it (their messages differ).
func errKind(err error) string {
	switch err {
	case nil, io.EOF, io.ErrUnexpectedEOF:
		return fmt.Sprint(err)
	}
	return "error"
}

// exchange sends raw on one connection to a server on ln, half-closes, and returns all it got.
func exchange(t testing.TB, addr string, raw []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		c.Write(raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatalf("reading the answer: %v", err)
	}
	return got
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "connection reset") }

// serveBoth starts echo on net/http and on the engine; it returns their addresses and the engine.
func serveBoth(t testing.TB) (netHTTP, engine string, srv *Server) {
	t.Helper()
	std := &http.Server{Handler: http.HandlerFunc(echo), ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 8 << 10}
	eng := New(Options{Handler: http.HandlerFunc(echo), Fallback: &http.Server{Handler: http.HandlerFunc(echo), ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 8 << 10}})
	a, b := listen(t), listen(t)
	go std.Serve(a)
	go eng.Serve(b)
	t.Cleanup(func() { std.Close(); eng.Close() })
	return a.Addr().String(), b.Addr().String(), eng
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// sameDate makes the Date lines of two answers comparable.
func sameDate(b []byte) []byte {
	return regexp.MustCompile(`(?m)^Date: [^\r]*\r$`).ReplaceAll(b, []byte("Date: X\r"))
}

var seeds = []string{
	"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	// A head known at WriteHeader (length and type given) is written then, with no header copy.
	"GET /length/type HTTP/1.1\r\nHost: a\r\n\r\nGET /early/length/type/trailer HTTP/1.1\r\nHost: a\r\n\r\nHEAD /length/type/204 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /length/type HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiPOST /unread/length/type HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /x?y=1&z=%20 HTTP/1.1\r\nHost: a.example:8080\r\nUser-Agent: gitlab-runner 17.11\r\nAccept: */*\r\nX-Dup: 1\r\nx-dup: 2\r\n\r\n",
	"POST /api/v4/jobs/request HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"token\":\"t\"}",
	"POST /chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
	"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2/big HTTP/1.1\r\nHost: a\r\n\r\nPOST /3 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiGET /4/close HTTP/1.1\r\nHost: a\r\n\r\nGET /5 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /10 HTTP/1.0\r\nHost: a\r\n\r\n",
	"GET /10ka HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\nGET /10ka/big HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n",
	"HEAD /head HTTP/1.1\r\nHost: a\r\n\r\nHEAD /head/length HTTP/1.1\r\nHost: a\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /204 HTTP/1.1\r\nHost: a\r\n\r\nGET /304/type HTTP/1.1\r\nHost: a\r\n\r\nGET /early HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /big/flush HTTP/1.1\r\nHost: a\r\n\r\nGET /flush/length HTTP/1.1\r\nHost: a\r\n\r\nGET /trailer/big HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /unread HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /unread HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /expect HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nabcdGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /unread/expect HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nabcdGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /close HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /short HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc",
	"POST /cut-chunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
	"POST /bad-chunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
	// Handed off: net/http answers these, after the engine served what came before.
	"GET /first HTTP/1.1\r\nHost: a\r\n\r\nGET /odd  HTTP/1.1\r\nHost: a\r\n\r\nGET /third HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a HTTP/1.1\r\nHost: a\r\n\r\nPOST /smuggle HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /cl-cl HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde",
	"POST /te-space HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
	"POST /te-list HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"GET /fold HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n b\r\n\r\n",
	"GET http://a/abs HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n\n",
	"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\n\r\n",
	"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
	"GET /" + strings.Repeat("a", 5000) + " HTTP/1.1\r\nHost: a\r\n\r\nGET /after-long HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 9000) + "\r\n\r\n",
}

// TestSameBytesAsNetHTTP sends the same bytes to net/http and to the engine, each serving echo:
// the answers are the same bytes (Date aside), whether the engine served a request or handed it
// off, mid-connection or at its start.
func TestSameBytesAsNetHTTP(t *testing.T) {
	std, eng, _ := serveBoth(t)
	for _, raw := range seeds {
		want, got := sameDate(exchange(t, std, []byte(raw))), sameDate(exchange(t, eng, []byte(raw)))
		if !bytes.Equal(got, want) {
			t.Errorf("request %q\nnet/http answered\n%s\nthe engine answered\n%s", raw, want, got)
		}
	}
}

// FuzzEngineAgainstNetHTTP: for any bytes, the engine answers what net/http answers.
func FuzzEngineAgainstNetHTTP(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	std, eng, srv := serveBoth(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		refused := srv.refusedBodies.Load()
		want, got := sameDate(exchange(t, std, raw)), sameDate(exchange(t, eng, raw))
		if bytes.Equal(got, want) || srv.refusedBodies.Load() != refused {
			return // the same, or the engine refused a chunked body outside its subset
		}
		t.Errorf("request %q\nnet/http answered\n%q\nthe engine answered\n%q", raw, want, got)
	})
}
