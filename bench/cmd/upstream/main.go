// Command upstream is the benchmark's stand-in for a GitLab cell: it answers every path on every
// listener with 200 {"ok":true}, after draining the request body, except GET /bytes?n=N, which
// answers N bytes (the download of the transfer case). It listens on several ports in
// one process because edge requires a distinct URL per cell while the benchmark wants one upstream
// process (one CPU account) behind every proxy.
//
// It prints "listening ADDR" on stdout for each listener, then "ready", so the harness can pass
// 127.0.0.1:0 and learn the ports.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// responseBody is what every request gets; small, like a runner API answer with no job.
const responseBody = `{"ok":true}` + "\n"

func main() {
	listen := flag.String("listen", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "comma-separated listen addresses")
	flag.Parse()
	if err := run(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

func run(listen string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var servers []*http.Server
	errc := make(chan error, 8)
	for _, addr := range strings.Split(listen, ",") {
		ln, err := net.Listen("tcp", strings.TrimSpace(addr))
		if err != nil {
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		srv := &http.Server{Handler: handler(port), ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		fmt.Printf("listening %s\n", ln.Addr())
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	fmt.Println("ready")

	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	return nil
}

// maxBytes bounds GET /bytes: enough for any transfer the harness makes.
const maxBytes = 1 << 30

// handler answers with headers the harness checks once before loading: which listener got the
// request (so routing to the intended cell is verified) and how many body bytes arrived (so a
// proxy that reads the body to find a token is seen to replay it whole).
func handler(port string) http.Handler {
	chunk := make([]byte, 256<<10) // what GET /bytes writes, over and over; never written to
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Bench-Upstream", port)
		h.Set("Bench-Body-Bytes", strconv.FormatInt(n, 10))
		if r.Method == http.MethodGet && r.URL.Path == "/bytes" {
			writeBytes(w, r.URL.Query().Get("n"), chunk)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(responseBody)))
		_, _ = io.WriteString(w, responseBody)
	})
}

// writeBytes answers n bytes with their Content-Length, from chunk.
func writeBytes(w http.ResponseWriter, n string, chunk []byte) {
	size, err := strconv.ParseInt(n, 10, 64)
	if err != nil || size < 0 || size > maxBytes {
		http.Error(w, fmt.Sprintf("n must be 0 to %d", maxBytes), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	for size > 0 {
		m := min(size, int64(len(chunk)))
		if _, err := w.Write(chunk[:m]); err != nil {
			return // the client went away
		}
		size -= m
	}
}
