package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// FreePort asks the kernel for a free loopback port. Another process could take it before the
// server binds it; the server then fails to start and the benchmark says so.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// WaitOK calls check until it returns nil, like WaitReady; on a timeout the error says what
// check said last, which is usually why.
func (p *Proc) WaitOK(ctx context.Context, timeout time.Duration, check func() error) error {
	lastErr := errors.New("not checked")
	err := p.WaitReady(ctx, timeout, func() (bool, error) {
		lastErr = check()
		return lastErr == nil, nil
	})
	if err != nil && !p.Exited() {
		return fmt.Errorf("%w (last: %v)", err, lastErr)
	}
	return err
}

// WaitHTTP waits until url answers 200 (edge's /readyz, an upstream's /).
func (p *Proc) WaitHTTP(ctx context.Context, timeout time.Duration, url string) error {
	return p.WaitOK(ctx, timeout, func() error { return GetOK(ctx, url) })
}

// GetOK is nil when a plain GET of url answers 200.
func GetOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
