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

// Listener is one HTTP listener of a fake server process (a cell, its control side).
type Listener struct {
	Name, Addr string
	Handler    http.Handler
}

// Servers are the running servers of a fake server process.
type Servers struct {
	srvs []*http.Server
	errc chan error
}

// Serve binds and serves each listener, printing "listening NAME ADDR" to out: the bench
// command that started the process reads the ports back from there.
func Serve(out io.Writer, ls []Listener) (*Servers, error) {
	s := &Servers{errc: make(chan error, len(ls))}
	for _, l := range ls {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			s.Shutdown()
			return nil, fmt.Errorf("listen %s on %s: %w", l.Name, l.Addr, err)
		}
		// No idle timeout, as a cell behind a pool of keep-alive connections: edge decides
		// when its idle connections close.
		srv := &http.Server{Handler: l.Handler, ReadHeaderTimeout: 10 * time.Second}
		s.srvs = append(s.srvs, srv)
		fmt.Fprintf(out, "listening %s %s\n", l.Name, ln.Addr())
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errc <- fmt.Errorf("serve %s: %w", l.Name, err)
			}
		}()
	}
	return s, nil
}

// Wait blocks until ctx ends (nil) or a server fails (its error).
func (s *Servers) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-s.errc:
		return err
	}
}

// Shutdown stops the servers, giving their requests 2 s to finish.
func (s *Servers) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range s.srvs {
		_ = srv.Shutdown(ctx)
	}
}
