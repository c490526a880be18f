package engine

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// healthy asks addr for / and fails the test unless it is answered 200.
func healthy(t *testing.T, addr string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Close = true // no idle connection left for settled to count
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("the engine no longer serves: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the engine answers %d", resp.StatusCode)
	}
}

// settled waits until the engine holds no connection: none leaked.
func settled(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still held", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientCutsOrResetsAtEveryByte: a client that closes or resets its connection at any byte
// of a request (head, length body, chunked body, or the next pipelined request) ends that
// connection alone: the handler sees a body error, never a panic, and nothing is held after.
func TestClientCutsOrResetsAtEveryByte(t *testing.T) {
	var bodies, errs atomic.Int32
	addr, s := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			errs.Add(1)
			return
		}
		bodies.Add(1)
		io.WriteString(w, strings.Repeat("x", 3000)) // chunked: longer than the length buffer
	}))
	for _, raw := range []string{
		"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
	} {
		for _, reset := range []bool{false, true} {
			for k := range len(raw) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(c, raw[:k])
				if reset {
					c.(*net.TCPConn).SetLinger(0)
				}
				c.Close()
			}
		}
	}
	healthy(t, addr)
	settled(t, s)
	if bodies.Load() == 0 || errs.Load() == 0 {
		t.Errorf("bodies read whole %d, cut %d: the cuts did not reach both", bodies.Load(), errs.Load())
	}
}

// TestStalledClientsTimeOut: a head that stops coming, and an idle connection, are closed by the
// read-header and idle timeouts.
func TestStalledClientsTimeOut(t *testing.T) {
	addr, s := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), func(fb *http.Server) {
		fb.ReadHeaderTimeout, fb.IdleTimeout = 200*time.Millisecond, 300*time.Millisecond
	})
	for _, sent := range []string{
		"",                                  // nothing at all
		"GET / HTTP/1.1\r\nHost: a\r\n",     // a head that stops
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n", // answered, then idle
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, sent)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Errorf("after %q: %v; want the engine to close the connection", sent, err)
		}
	}
	settled(t, s)
}

// TestClientStopsReadingTheAnswer: a handler's write deadline ends a write the client does not
// read; the connection closes and the engine serves on.
func TestClientStopsReadingTheAnswer(t *testing.T) {
	wrote := make(chan error, 1)
	addr, s := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			return
		}
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		chunk := make([]byte, 1<<20)
		var err error
		for i := 0; i < 256 && err == nil; i++ {
			_, err = w.Write(chunk)
		}
		wrote <- err
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
	var ne net.Error
	if err := <-wrote; !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("the handler's write ended with %v, want a timeout", err)
	}
	healthy(t, addr)
	c.Close()
	settled(t, s)
}

// TestClientLeavesDuringTheAnswer: writes fail once the client is gone; the handler returns.
func TestClientLeavesDuringTheAnswer(t *testing.T) {
	wrote := make(chan error, 1)
	addr, s := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			return
		}
		var err error
		for i := 0; i < 10_000 && err == nil; i++ {
			if _, err = w.Write(make([]byte, 64<<10)); err == nil {
				err = http.NewResponseController(w).Flush()
			}
		}
		wrote <- err
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
	bufio.NewReader(c).Peek(1)
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	if err := <-wrote; err == nil {
		t.Errorf("640 MiB written to a client that left")
	}
	healthy(t, addr)
	settled(t, s)
}

// TestPanicEndsTheConnectionOnly: a panic out of the handler closes its connection, and the
// engine serves on.
func TestPanicEndsTheConnectionOnly(t *testing.T) {
	addr, s := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			io.WriteString(w, "half")
			panic("handler bug")
		}
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Errorf("after the panic: %q, %v; want the connection closed without an answer", got, err)
	}
	healthy(t, addr)
	settled(t, s)
}

// TestRefusedBodyAnswerReachesTheClient: a handler that refuses a large body without reading it
// is answered to a client still sending it; the connection is not reset under the answer.
func TestRefusedBodyAnswerReachesTheClient(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}))
	for _, chunked := range []bool{false, true} {
		body := io.Reader(strings.NewReader(strings.Repeat("x", 32<<20)))
		if chunked {
			body = io.MultiReader(body) // no length: sent chunked
		}
		resp, err := http.Post("http://"+addr+"/upload", "application/octet-stream", body)
		if err != nil {
			t.Fatalf("chunked %v: %v; want the 413", chunked, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked %v: %d, want 413", chunked, resp.StatusCode)
		}
	}
}
