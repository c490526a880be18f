// Command plainproxy is edgebench's "plain httputil proxy" (issue 18's peer for the CPU a POST
// costs): Go's httputil.ReverseProxy, tuned as a careful operator would and doing nothing else.
// Rewrite sets the upstream URL and the X-Forwarded-* headers; its http.Transport keeps up to
// 1024 idle upstream connections for 90 s and never asks for compression; response bodies are
// copied through 32 KiB buffers from a sync.Pool. It logs nothing per request. GOMAXPROCS is Go's
// default, which follows the CPUs the process may run on (1 when pinned with taskset, as edge).
//
//	plainproxy --listen 127.0.0.1:8081 --upstream http://127.0.0.1:3001
//
// It prints one line on stderr when it listens.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "upstream base URL (http://host:port)")
	flag.Parse()
	if err := run(*listen, *upstream, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "plainproxy:", err)
		os.Exit(1)
	}
}

func run(listen, upstream string, logw io.Writer) error {
	u, err := parseUpstream(upstream)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	srv := &http.Server{Handler: newProxy(u), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	fmt.Fprintf(logw, "plainproxy: listening %s, upstream %s, GOMAXPROCS %d, %s\n", ln.Addr(), u, runtime.GOMAXPROCS(0), runtime.Version())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func parseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--upstream %q: want an http:// or https:// URL with a host", s)
	}
	return u, nil
}

// newProxy is the tuned ReverseProxy to u.
func newProxy(u *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			Proxy:                 nil, // never an environment proxy between it and the upstream
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   1024,
			IdleConnTimeout:       90 * time.Second,
			DisableCompression:    true,
			ExpectContinueTimeout: time.Second,
		},
		BufferPool: newBufferPool(),
	}
}

// bufferSize is the copy buffer ReverseProxy would otherwise allocate for every response.
const bufferSize = 32 << 10

// bufferPool hands ReverseProxy 32 KiB buffers kept in a sync.Pool (as pointers, so that Get
// allocates nothing once the pool is warm).
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, bufferSize); return &b }}}
}

func (b *bufferPool) Get() []byte { return *b.p.Get().(*[]byte) }

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) != bufferSize {
		return
	}
	buf = buf[:bufferSize]
	b.p.Put(&buf)
}
