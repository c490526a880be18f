package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
)

// handoffListener yields the connections the engine hands to the fallback server.
type handoffListener struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newHandoffListener() *handoffListener {
	return &handoffListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// give hands c over; false (c closed) when the listener has closed.
func (l *handoffListener) give(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		c.Close()
		return false
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero} }

// handedConn is a connection handed off after the engine read some of its bytes: net/http reads
// those first. On TLS it keeps the handshake's state, which net/http cannot see through the
// wrapper: the fallback's requests get it as r.TLS all the same (handOffTLS).
type handedConn struct {
	net.Conn
	mu     sync.Mutex
	prefix *bytes.Reader
	tls    *tls.ConnectionState
}

func (c *handedConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if c.prefix.Len() > 0 {
		defer c.mu.Unlock()
		return c.prefix.Read(b)
	}
	c.mu.Unlock()
	return c.Conn.Read(b)
}

type tlsStateKey struct{}

// handOffTLS gives the fallback's requests on a handed TLS connection their TLS state.
func handOffTLS(srv *http.Server) {
	connContext, next := srv.ConnContext, srv.Handler
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if connContext != nil {
			ctx = connContext(ctx, c)
		}
		if hc, ok := c.(*handedConn); ok && hc.tls != nil {
			ctx = context.WithValue(ctx, tlsStateKey{}, hc.tls)
		}
		return ctx
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			if state, ok := r.Context().Value(tlsStateKey{}).(*tls.ConnectionState); ok {
				r.TLS = state
			}
		}
		next.ServeHTTP(w, r)
	})
}
