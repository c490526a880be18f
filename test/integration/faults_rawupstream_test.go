package integration

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// rawUpstream is what every upstream of the fault matrices that writes HTTP by hand shares (the
// fault cell, the plan-driven fault upstream, the WebSocket app): a loopback listener; its
// connections, each marked while in the middle of a request (read, not yet answered), to close
// them between cases; when each case's requests came; and the cases whose connection the other
// side closed while the request was held (it gave up on the request).
type rawUpstream struct {
	ln    net.Listener
	mu    sync.Mutex // also guards the records of the upstream that embeds it
	conns map[net.Conn]bool
	seen  map[string][]time.Time
	gone  map[string]bool
}

// listen starts serving: serve answers one request, and says whether the connection goes on.
func (s *rawUpstream) listen(t *testing.T, serve func(conn net.Conn, br *bufio.Reader, req *http.Request) bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln, s.conns, s.seen, s.gone = ln, map[net.Conn]bool{}, map[string][]time.Time{}, map[string]bool{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[conn] = false
			s.mu.Unlock()
			go s.serveConn(conn, serve)
		}
	}()
	t.Cleanup(func() { ln.Close(); s.closeConns() })
}

func (s *rawUpstream) serveConn(conn net.Conn, serve func(net.Conn, *bufio.Reader, *http.Request) bool) {
	defer func() {
		conn.Close()
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		s.setBusy(conn, true)
		if !serve(conn, br, req) {
			return
		}
		s.setBusy(conn, false)
	}
}

func (s *rawUpstream) url() string { return "http://" + s.ln.Addr().String() }

func (s *rawUpstream) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// note counts a request of case id.
func (s *rawUpstream) note(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[id] = append(s.seen[id], time.Now())
}

// count is how many requests of case id came; times, when.
func (s *rawUpstream) count(id string) int { return len(s.times(id)) }

func (s *rawUpstream) times(id string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.seen[id]...)
}

// waitRequest waits up to 5 s for the case's request to have come (what).
func (s *rawUpstream) waitRequest(t *testing.T, id, what string) {
	t.Helper()
	poll.Until(t, 5*time.Second, what, func() bool { return s.count(id) == 1 })
}

func (s *rawUpstream) abandon(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone[id] = true
}

// abandoned tells whether the other side closed the case's connection while its request was held.
func (s *rawUpstream) abandoned(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone[id]
}

// wantAbandoned: the client's going away reached the upstream (who), which saw its connection
// closed while it held the request: the request cancelled, not left to run.
func (s *rawUpstream) wantAbandoned(t *testing.T, id, who string) {
	t.Helper()
	poll.Wait(t, 2*time.Second, who+"'s connection closed while it held the request (the client's going away cancelled it)",
		func() bool { return s.abandoned(id) })
}

// holdOrAbandon waits d before the answer: false, the case abandoned, when the other side closed
// the connection first.
func (s *rawUpstream) holdOrAbandon(conn net.Conn, br *bufio.Reader, id string, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := br.Peek(1)
	conn.SetReadDeadline(time.Time{})
	if err != nil && !isTimeoutErr(err) {
		s.abandon(id)
		return false
	}
	return true
}

// busy counts the connections in the middle of a request (or holding a stream open).
func (s *rawUpstream) busy() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.conns {
		if b {
			n++
		}
	}
	return n
}

func (s *rawUpstream) setBusy(conn net.Conn, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[conn]; ok {
		s.conns[conn] = busy
	}
}

// released waits up to 2 s for no connection in the middle of a request.
func (s *rawUpstream) released(t *testing.T, what string) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, what, func() (bool, string) {
		n := s.busy()
		return n == 0, fmt.Sprintf("%d held", n)
	})
}

// closeConns ends every connection to the upstream, so that a case starts on new ones.
func (s *rawUpstream) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for conn := range s.conns {
		conn.Close()
		delete(s.conns, conn)
	}
}
