package engine

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// served says which server answered: the engine, or net/http after a hand-off.
func served(w http.ResponseWriter) string {
	if _, ok := w.(*response); ok {
		return "engine"
	}
	return "net/http"
}

// start serves h through an engine on loopback; the fallback serves h too.
func start(t testing.TB, h http.Handler, tune ...func(*http.Server)) (string, *Server) {
	t.Helper()
	fb := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second}
	for _, f := range tune {
		f(fb)
	}
	s := New(Options{Handler: h, Fallback: fb})
	ln := listen(t)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return ln.Addr().String(), s
}

func TestKeepAliveThroughTheEngineAndHandOffMidConnection(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, served(w)+" "+r.URL.Path)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, step := range []struct{ req, want string }{
		{"GET /one HTTP/1.1\r\nHost: a\r\n\r\n", "engine /one"},
		{"GET /two HTTP/1.1\r\nHost: a\r\n\r\n", "engine /two"},
		{"GET /three HTTP/1.1\r\nHost: a\r\nX-Folded: a\r\n b\r\n\r\n", "net/http /three"}, // obs-fold: handed off
		{"GET /four HTTP/1.1\r\nHost: a\r\n\r\n", "net/http /four"},                        // and net/http's from then on
	} {
		io.WriteString(c, step.req)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", step.req, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != step.want {
			t.Errorf("%q: answered %q, want %q", step.req, body, step.want)
		}
	}
}

func TestTLS(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Errorf("%s: r.TLS is nil on a TLS connection", served(w))
		}
		io.WriteString(w, served(w)+" "+r.Proto)
	})
	ts := httptest.NewUnstartedServer(h) // for its certificate
	ts.EnableHTTP2 = true
	ts.StartTLS()
	cfg := ts.TLS.Clone()
	ts.Close()
	cfg.NextProtos = []string{"h2", "http/1.1"}
	fb := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, TLSConfig: cfg.Clone()}
	s := New(Options{Handler: h, Fallback: fb})
	ln := tls.NewListener(listen(t), cfg)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	pool := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	for _, c := range []struct {
		name string
		h2   bool
		want string
	}{
		{"http/1.1", false, "engine HTTP/1.1"},
		{"h2", true, "net/http HTTP/2.0"},
	} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"}, ForceAttemptHTTP2: c.h2}
		if !c.h2 {
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		}
		resp, err := (&http.Client{Transport: tr}).Get("https://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if string(body) != c.want {
			t.Errorf("%s: %q, want %q", c.name, body, c.want)
		}
	}

	// Handed off mid-connection, a TLS request still has its r.TLS.
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "example.com", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nX-F: a\r\n b\r\n\r\n")
	br := bufio.NewReader(conn)
	for _, want := range []string{"engine HTTP/1.1", "net/http HTTP/1.1"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != want {
			t.Errorf("%q, want %q", body, want)
		}
	}
}

func TestClientGoneCancelsTheRequest(t *testing.T) {
	canceled := make(chan time.Duration, 1)
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		began := time.Now()
		select {
		case <-r.Context().Done():
			canceled <- time.Since(began)
		case <-time.After(10 * time.Second):
			canceled <- -1
		}
	}))
	for _, req := range []string{
		"GET /poll HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /poll HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, req)
		time.Sleep(300 * time.Millisecond)
		c.Close()
		if d := <-canceled; d < 0 {
			t.Errorf("%q: the client went, and the request's context was never canceled", req)
		}
	}
}

func TestHijackKeepsPipelinedBytes(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		next, _ := brw.Reader.Peek(brw.Reader.Buffered())
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(next))+"\r\nConnection: close\r\n\r\n"+string(next))
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /hijack HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if want := "GET /next HTTP/1.1\r\nHost: a\r\n\r\n"; string(body) != want {
		t.Errorf("the hijacker found %q buffered, want %q", body, want)
	}
}

func TestDrain(t *testing.T) {
	release := make(chan struct{})
	var began atomic.Int32
	addr, s := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			began.Add(1)
			<-release
		}
		io.WriteString(w, "done")
	}))
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	for began.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()

	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the idle connection: read %d, %v; want it closed by the drain", n, err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Close {
		t.Errorf("the answer in flight during the drain does not close its connection")
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("still accepting after Shutdown")
	}
}
