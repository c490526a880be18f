package integration

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/poll"
)

// faultPlan is what a fault upstream does with one request: the case it counts the request
// under, the fault it commits (upstreamFaults), how long it holds the request first, and the
// answer it writes whole or cuts short.
type faultPlan struct {
	id      string
	fault   string
	hold    time.Duration
	status  string // the status line's code and reason; "" is "200 OK"
	header  string // more header lines, each ending in CRLF
	body    string // at least two bytes: the faults cut it
	chunked bool
	// events make the answer a stream (a watch): each event its own chunk, and the stream stays
	// open after them until the connection ends, unless the fault ends it.
	events []string
}

// faultUpstream writes HTTP by hand with faultCell's writer (writeAnswer), but learns each
// request's case and fault from plan, which reads the request as it came (its path, its body) and
// what the test set for the case, where faultCell reads the client's headers: the requests edge
// makes itself (a call to an admission controller, failing a job at its cell, a member's part of
// a list) carry none of them.
type faultUpstream struct {
	ln    net.Listener
	plan  func(req *http.Request, body []byte) faultPlan
	mu    sync.Mutex
	seen  map[string][]time.Time // when each request of a case came
	conns map[net.Conn]bool      // true in the middle of a request: read, not yet answered (or a stream open)
	gone  map[string]bool        // cases whose connection edge closed while the upstream held the request
}

func newFaultUpstream(t *testing.T, plan func(req *http.Request, body []byte) faultPlan) *faultUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &faultUpstream{ln: ln, plan: plan, seen: map[string][]time.Time{}, conns: map[net.Conn]bool{}, gone: map[string]bool{}}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns[conn] = false
			u.mu.Unlock()
			go u.serve(conn)
		}
	}()
	t.Cleanup(func() { ln.Close(); u.closeConns() })
	return u
}

func (u *faultUpstream) url() string { return "http://" + u.ln.Addr().String() }

// count is how many requests of case id came; times, when.
func (u *faultUpstream) count(id string) int { return len(u.times(id)) }

func (u *faultUpstream) times(id string) []time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]time.Time(nil), u.seen[id]...)
}

// abandoned tells whether edge closed the case's connection while the upstream held its request.
func (u *faultUpstream) abandoned(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gone[id]
}

// busy counts the connections in the middle of a request (or holding a stream open).
func (u *faultUpstream) busy() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, b := range u.conns {
		if b {
			n++
		}
	}
	return n
}

func (u *faultUpstream) setBusy(conn net.Conn, busy bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.conns[conn]; ok {
		u.conns[conn] = busy
	}
}

// closeConns ends every connection edge holds to the upstream, so that a case starts on new ones.
func (u *faultUpstream) closeConns() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for conn := range u.conns {
		conn.Close()
		delete(u.conns, conn)
	}
}

func (u *faultUpstream) serve(conn net.Conn) {
	defer func() {
		conn.Close()
		u.mu.Lock()
		delete(u.conns, conn)
		u.mu.Unlock()
	}()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		u.setBusy(conn, true)
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		p := u.plan(req, body)
		u.mu.Lock()
		u.seen[p.id] = append(u.seen[p.id], time.Now())
		u.mu.Unlock()
		if p.hold > 0 && !holdUnlessClosed(conn, br, p.hold) {
			u.mu.Lock()
			u.gone[p.id] = true
			u.mu.Unlock()
			return
		}
		if !writeAnswer(conn, p) {
			return
		}
		u.setBusy(conn, false)
	}
}

// holdUnlessClosed waits d before the answer: false when the peer closed the connection first.
func holdUnlessClosed(conn net.Conn, br *bufio.Reader, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := br.Peek(1)
	conn.SetReadDeadline(time.Time{})
	return err == nil || isTimeoutErr(err)
}

// writeAnswer writes p's answer, or commits its fault instead of (or in the middle of) it; false
// when the connection is done.
func writeAnswer(conn net.Conn, p faultPlan) bool {
	status := cmp.Or(p.status, "200 OK")
	stream := p.events != nil
	body, pieces := p.body, p.events
	if stream {
		body = strings.Join(p.events, "")
	}
	chunked := p.chunked || stream
	if !stream {
		half := len(body) / 2
		pieces = []string{body[:half], body[half:]}
	}
	top := "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + p.header
	head := top + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if chunked {
		head = top + "Transfer-Encoding: chunked\r\n\r\n"
	}
	var chunks strings.Builder
	for _, s := range pieces {
		chunks.WriteString(chunk(s))
	}
	whole := head + body
	if chunked {
		whole = head + chunks.String() + "0\r\n\r\n"
	}
	half := body[:len(body)/2]
	cut := func(s string) string { return head + firstPart(s, chunked) }
	reset := func() {
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
	}
	switch p.fault {
	case upCloseStatus:
		io.WriteString(conn, "HTTP/1.1 2")
		return false
	case upResetStatus:
		io.WriteString(conn, "HTTP/1.1 2")
		reset()
		return false
	case upCloseHeaders:
		io.WriteString(conn, "HTTP/1.1 "+status+"\r\nContent-Type: appl")
		return false
	case upResetHeaders:
		io.WriteString(conn, "HTTP/1.1 "+status+"\r\nContent-Type: appl")
		reset()
		return false
	case upCloseFirstByte:
		io.WriteString(conn, cut(body[:1]))
		return false
	case upCloseMidBody:
		io.WriteString(conn, cut(half))
		return false
	case upResetMidBody:
		io.WriteString(conn, cut(half))
		reset()
		return false
	case upCloseLastChunk:
		io.WriteString(conn, top+"Transfer-Encoding: chunked\r\n\r\n"+chunks.String())
		return false
	case upStall:
		io.Copy(io.Discard, conn) // until edge gives up and closes, or the test ends
		return false
	case upStallMidBody:
		io.WriteString(conn, cut(half))
		io.Copy(io.Discard, conn)
		return false
	case upExtraBytes:
		io.WriteString(conn, whole+"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"case\":\"evil\"}")
		return true
	case upInterimClose:
		io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
		return false
	}
	if stream {
		io.WriteString(conn, head+chunks.String())
		io.Copy(io.Discard, conn) // a watch stays open until edge ends it
		return false
	}
	io.WriteString(conn, whole)
	return true
}

// caseFaults are what a test sets for each case of an upstream that reads the case from the
// request itself: its fault, hold and answer form.
type caseFaults struct {
	mu sync.Mutex
	m  map[string]caseFault
}

type caseFault struct {
	fault  string
	hold   time.Duration
	form   string // the answer's form, as the path's plan reads it ("big", "reject", ...)
	once   bool   // only the case's first request faults; the next ones are answered whole
	status string // a status line's code and reason instead of the path's own ("503 Service Unavailable")
	header string // with status: more header lines, each ending in CRLF
}

func (f *caseFaults) set(id string, c caseFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]caseFault{}
	}
	f.m[id] = c
}

// get is the case's fault for its request number n (0 for the first).
func (f *caseFaults) get(id string, n int) caseFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.m[id]
	if c.fault == "" || c.once && n > 0 {
		c.fault, c.status, c.header = upNone, "", ""
	}
	return c
}

// response is one answer a client read by hand.
type response struct {
	status   int // 0: no answer at all
	header   http.Header
	body     string
	bodyErr  error // nil when the body was read whole
	interims int
}

// readResponse reads one answer (after its 1xx) within patience, whole.
func readResponse(conn net.Conn, br *bufio.Reader, patience time.Duration) response {
	conn.SetReadDeadline(time.Now().Add(patience))
	defer conn.SetReadDeadline(time.Time{})
	var r response
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return r
		}
		if resp.StatusCode < 200 {
			r.interims++
			continue
		}
		b, err := io.ReadAll(resp.Body)
		r.status, r.header, r.body, r.bodyErr = resp.StatusCode, resp.Header, string(b), err
		return r
	}
}

// logHas waits up to 2 s for a line of p's output after mark that holds every part.
func logHas(t *testing.T, p watched, mark int, parts ...string) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, fmt.Sprintf("a line of %s's log with %q", p.name, parts), func() (bool, string) {
		out := p.out.String()
		for _, line := range strings.Split(out[min(mark, len(out)):], "\n") {
			found := true
			for _, s := range parts {
				found = found && strings.Contains(line, s)
			}
			if found {
				return true, line
			}
		}
		return false, "no such line"
	})
}
