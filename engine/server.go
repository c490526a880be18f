// Package engine serves HTTP/1.1 connections itself: the requests h1 reads go to the handler
// through edge's own connection loop (one read buffer per connection, heads parsed in place, keep-
// alive and pipelining, bodies by length or chunked, 100-continue), and every connection whose
// bytes h1 hands off goes, with the bytes already read, to a net/http server that answers or
// refuses them as it always has (HTTP/2 by ALPN, upgrades, anything outside the subset).
package engine

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gitlab.com/edge/edge/h1"
	"gitlab.com/edge/edge/internal/guard"
)

// Options configure a Server.
type Options struct {
	// Handler serves the requests the engine reads.
	Handler http.Handler
	// Fallback serves the connections the engine hands off; its handler, TLS config (HTTP/2) and
	// error log are its own, and the engine takes its limits: ReadHeaderTimeout, IdleTimeout and
	// MaxHeaderBytes.
	Fallback *http.Server
	Log      *slog.Logger
	Guard    *guard.Guard // contains a connection's panic; nil: contained all the same
}

// Server serves connections; it is used once, like http.Server.
type Server struct {
	handler           http.Handler
	fallback          *http.Server
	handoff           *handoffListener
	limits            h1.Limits
	readHeaderTimeout time.Duration
	idleTimeout       time.Duration
	log               *slog.Logger
	guard             *guard.Guard
	readers           bufferPool[*bufio.Reader]
	lengthBuffers     sync.Pool // *bufio.Writer of bufferBeforeChunking, a response's first bytes
	dates             atomic.Pointer[dated]
	writers           bufferPool[*bufio.Writer]

	fallbackOnce sync.Once
	fallbackDone chan struct{}
	draining     atomic.Bool
	// refusedBodies counts chunked bodies outside h1's subset (extensions, trailers), which
	// net/http would have read: the engine's refusals.
	refusedBodies atomic.Int64

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closed    bool
}

// New makes a Server from o.
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	fb := o.Fallback
	maxHead := fb.MaxHeaderBytes
	if maxHead <= 0 {
		maxHead = http.DefaultMaxHeaderBytes
	}
	s := &Server{
		readers: bufferPool[*bufio.Reader]{
			fresh: func(c net.Conn) *bufio.Reader { return bufio.NewReaderSize(c, readBufferSize) },
			reset: func(br *bufio.Reader, c net.Conn) { br.Reset(c) },
		},
		writers: bufferPool[*bufio.Writer]{
			fresh: func(c net.Conn) *bufio.Writer { return bufio.NewWriterSize(c, writeBufferSize) },
			reset: func(bw *bufio.Writer, c net.Conn) { bw.Reset(c) },
		},
		handler: o.Handler, fallback: fb, handoff: newHandoffListener(),
		limits:            h1.Limits{MaxHead: maxHead, MaxHeaders: h1.DefaultMaxHeaders},
		readHeaderTimeout: fb.ReadHeaderTimeout, idleTimeout: fb.IdleTimeout,
		log: o.Log, guard: o.Guard, fallbackDone: make(chan struct{}),
		listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{},
	}
	if s.idleTimeout <= 0 {
		s.idleTimeout = s.readHeaderTimeout
	}
	handOffTLS(fb)
	return s
}

// Serve accepts ln's connections until Shutdown or Close, and returns http.ErrServerClosed then;
// any other error is the listener's.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(ln) {
		ln.Close()
		return http.ErrServerClosed
	}
	defer s.untrack(ln)
	s.fallbackOnce.Do(func() {
		s.guard.Go("fallback server", func() {
			defer close(s.fallbackDone)
			_ = s.fallback.Serve(s.handoff)
		})
	})
	var backoff time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return http.ErrServerClosed
			}
			var ne interface{ Temporary() bool }
			if errors.As(err, &ne) && ne.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "error", err, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := s.newConn(rwc)
		if !s.add(c) {
			rwc.Close()
			continue
		}
		go c.serve() // guard: serve contains its own panics (the connection's)
	}
}

// Shutdown stops accepting, closes idle connections, lets those serving a request finish it and
// then close, and returns once none is left or ctx ends (then with ctx's error, the connections
// still open left to Close). The fallback server shuts down the same way alongside.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.closeListeners()
	fallback := make(chan error, 1)
	go func() { fallback <- s.fallback.Shutdown(ctx) }() // guard: net/http's Shutdown, which cannot panic
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.wakeIdle() == 0 {
			break
		}
		select {
		case <-ctx.Done():
			<-fallback
			return ctx.Err()
		case <-tick.C:
		}
	}
	err := <-fallback
	s.handoff.Close()
	s.awaitFallback()
	return err
}

// awaitFallback waits for the fallback server's Serve, once it has returned or will (it was shut
// down or closed).
func (s *Server) awaitFallback() {
	s.fallbackOnce.Do(func() { close(s.fallbackDone) }) // never started: nothing to wait for
	<-s.fallbackDone
}

// Close closes the listeners and every connection at once, the fallback server's too.
func (s *Server) Close() error {
	s.draining.Store(true)
	s.closeListeners()
	s.mu.Lock()
	for c := range s.conns {
		c.rwc.Close()
	}
	s.mu.Unlock()
	err := s.fallback.Close()
	s.handoff.Close()
	s.awaitFallback()
	return err
}

func (s *Server) track(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) untrack(ln net.Listener) {
	s.mu.Lock()
	delete(s.listeners, ln)
	s.mu.Unlock()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
}

func (s *Server) add(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) remove(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// wakeIdle ends the wait of every idle connection (it sees the drain and closes) and returns how
// many connections are left.
func (s *Server) wakeIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.Load() == stateIdle {
			c.rwc.SetReadDeadline(longAgo())
		}
	}
	return len(s.conns)
}

// longAgo is a deadline already past: it ends a blocked read at once.
func longAgo() time.Time { return time.Unix(1, 0) }

// dated is the Date header's value for one second.
type dated struct {
	sec   int64
	value []byte
}

// date is the Date header's value now, formatted once a second.
func (s *Server) date() []byte {
	now := time.Now()
	if d := s.dates.Load(); d != nil && d.sec == now.Unix() {
		return d.value
	}
	d := &dated{sec: now.Unix(), value: now.UTC().AppendFormat(nil, http.TimeFormat)}
	s.dates.Store(d)
	return d.value
}
