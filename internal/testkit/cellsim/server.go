package cellsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is a Cell served over HTTP on a real listener.
type Server struct {
	*Cell
	URL  string // http://127.0.0.1:<port>
	srv  *http.Server
	done chan struct{}
}

// NewServer starts a cell listening on addr ("" means 127.0.0.1 on a free port).
func NewServer(addr string, opts Options) (*Server, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cellsim: listen: %w", err)
	}
	s := &Server{
		Cell: c,
		URL:  "http://" + ln.Addr().String(),
		srv:  &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("serve", "err", err)
		}
	}()
	return s, nil
}

// Shutdown stops accepting requests and waits for those in flight (held job requests too)
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	if err != nil {
		return fmt.Errorf("cellsim: shutdown: %w", err)
	}
	return nil
}

// Close stops the server at once; requests in flight, held ones included, are cut.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	if err != nil {
		return fmt.Errorf("cellsim: close: %w", err)
	}
	return nil
}
