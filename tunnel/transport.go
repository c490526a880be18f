package tunnel

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
)

// Transport sends requests to the agent through its connections, round robin (for
// httputil.ReverseProxy). The request's URL host is not used to route (any host does; the scheme
// is http); set PortHeader to name the agent's upstream. Errors: ErrAgentNotConnected,
// ErrTooManyStreams, or a failure of the connection.
func (s *Server) Transport(agentID string) http.RoundTripper {
	return &roundTripper{s: s, agentID: agentID}
}

type roundTripper struct {
	s       *Server
	agentID string
	conn    *Conn // set: only this connection
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		req = req.Clone(req.Context())
		req.URL.Scheme = "http"
		if req.URL.Host == "" {
			req.URL.Host = "agent"
		}
	}
	var tried []*Conn
	for {
		c, err := rt.s.acquire(rt.agentID, rt.conn, tried)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			rt.s.metrics.requests.WithLabelValues(resultOf(err)).Inc()
			return nil, err
		}
		resp, err := c.roundTrip(req)
		if err != nil {
			c.release()
			// Nothing was sent: another connection can take a request that has no body to replay.
			if rt.conn == nil && errors.Is(err, errOpenStream) && (req.Body == nil || req.Body == http.NoBody) {
				tried = append(tried, c)
				continue
			}
			rt.s.metrics.requests.WithLabelValues("error").Inc()
			return nil, err
		}
		rt.s.metrics.requests.WithLabelValues("ok").Inc()
		done := c.release
		resp.Body = releasingBody(resp.Body, done)
		return resp, nil
	}
}

// roundTrip sends req on one of c's splice streams when the agent splices, else as a request
// the agent serves.
func (c *Conn) roundTrip(req *http.Request) (*http.Response, error) {
	if c.splice == nil {
		return c.transport.RoundTrip(req)
	}
	out, ok := c.server.spliced(req)
	if !ok {
		return c.transport.RoundTrip(req)
	}
	resp, err := c.splice.RoundTrip(out)
	var refused *RefusedError
	if errors.As(err, &refused) {
		return refused.Response(req), nil
	}
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

func resultOf(err error) string {
	switch {
	case errors.Is(err, ErrTooManyStreams):
		return "too_many_streams"
	case errors.Is(err, ErrAgentNotConnected), errors.Is(err, ErrConnectionGone):
		return "not_connected"
	}
	return "error"
}

// acquire picks a connection for one request and counts the request in flight on it.
func (s *Server) acquire(agentID string, only *Conn, skip []*Conn) (*Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, e, err := s.pickLocked(agentID, only, skip, nil)
	if err != nil {
		return nil, err
	}
	if max := s.opts.MaxStreamsPerAgent; max > 0 && e.inflight >= max {
		return nil, ErrTooManyStreams
	}
	c.inflight++
	e.inflight++
	s.metrics.streams.Inc()
	return c, nil
}

// pickLocked picks the named connection, or the agent's next one round robin that is not in
// skip and that ok takes (nil: any). Called with s.mu held.
func (s *Server) pickLocked(agentID string, only *Conn, skip []*Conn, ok func(*Conn) bool) (*Conn, *agentEntry, error) {
	if only != nil {
		if only.draining {
			return nil, nil, ErrConnectionGone
		}
		return only, only.entry, nil
	}
	e := s.agents[agentID]
	if e == nil {
		return nil, nil, ErrAgentNotConnected
	}
	for i := range e.conns {
		j := (e.next + i) % len(e.conns)
		if c := e.conns[j]; !slices.Contains(skip, c) && (ok == nil || ok(c)) {
			e.next = j + 1
			return c, e, nil
		}
	}
	return nil, nil, ErrAgentNotConnected
}

// release ends one request in flight on c; a draining connection closes with its last one.
func (c *Conn) release() {
	s := c.server
	s.mu.Lock()
	c.inflight--
	c.entry.inflight--
	last := c.draining && c.inflight == 0
	s.mu.Unlock()
	s.metrics.streams.Dec()
	if last {
		c.session.Close()
	}
}

// releasingBody calls done once when the body is closed. A 101 answer's body is the upgraded
// stream and stays writable, as httputil.ReverseProxy needs.
func releasingBody(body io.ReadCloser, done func()) io.ReadCloser {
	b := &onClose{ReadCloser: body, done: done}
	if w, ok := body.(io.ReadWriteCloser); ok {
		return &onCloseWriter{onClose: b, w: w}
	}
	return b
}

type onClose struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *onClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

type onCloseWriter struct {
	*onClose
	w io.Writer
}

func (b *onCloseWriter) Write(p []byte) (int, error) { return b.w.Write(p) }

// inflight counts the agent's requests in flight (tests and metrics).
func (s *Server) inflight(agentID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.agents[agentID]; e != nil {
		return e.inflight
	}
	return 0
}
