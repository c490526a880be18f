package integration

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The upstream faults of the matrix: what a cell does instead of (or in the middle of) its answer.
const (
	upNone           = "none"             // a whole answer
	upCloseStatus    = "close-status"     // part of the status line, then FIN
	upResetStatus    = "reset-status"     // part of the status line, then RST
	upCloseHeaders   = "close-headers"    // the status line and part of the headers, then FIN
	upResetHeaders   = "reset-headers"    // the same, then RST
	upCloseFirstByte = "close-first-byte" // the head and one byte of the body, then FIN
	upCloseMidBody   = "close-mid-body"   // half the body, then FIN
	upResetMidBody   = "reset-mid-body"   // half the body, then RST
	upCloseLastChunk = "close-last-chunk" // a chunked answer without its last chunk, then FIN
	upStall          = "stall"            // nothing at all, past every timeout
	upStallMidBody   = "stall-mid-body"   // the head and half the body, then nothing
	upExtraBytes     = "extra-bytes"      // a whole answer, then bytes nobody asked for
	upInterimClose   = "interim-close"    // a 103, then FIN
)

var upstreamFaults = []string{upNone, upCloseStatus, upResetStatus, upCloseHeaders, upResetHeaders,
	upCloseFirstByte, upCloseMidBody, upResetMidBody, upCloseLastChunk, upStall, upStallMidBody,
	upExtraBytes, upInterimClose}

// faultCell is a cell that writes HTTP by hand: each request says, in headers edge passes on
// unchanged, its case (X-Case), the fault to commit (X-Fault), how long to hold it first (X-Hold,
// ms) and the answer's form (X-Answer: chunked, big). It counts the requests of each case, notes
// the cases whose connection edge closed while the request was held (edge gave up on it), and
// keeps its connections, to close them between cases. It serves an agent's upstream port as well
// as a cell: only the headers drive it.
type faultCell struct {
	ln    net.Listener
	mu    sync.Mutex
	seen  map[string]int
	gone  map[string]bool
	conns map[net.Conn]bool // true while a request is in the middle: read, not yet answered
	stop  chan struct{}
}

func newFaultCell(t *testing.T) *faultCell {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &faultCell{ln: ln, seen: map[string]int{}, gone: map[string]bool{}, conns: map[net.Conn]bool{}, stop: make(chan struct{})}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.conns[conn] = false
			c.mu.Unlock()
			go c.serve(conn)
		}
	}()
	t.Cleanup(func() { close(c.stop); ln.Close(); c.closeConns() })
	return c
}

func (c *faultCell) url() string { return "http://" + c.ln.Addr().String() }

func (c *faultCell) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

func (c *faultCell) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[id]
}

// abandoned tells whether edge closed the case's connection while the cell held its request.
func (c *faultCell) abandoned(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone[id]
}

// busy counts the connections in the middle of a request.
func (c *faultCell) busy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, b := range c.conns {
		if b {
			n++
		}
	}
	return n
}

func (c *faultCell) setBusy(conn net.Conn, busy bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.conns[conn]; ok {
		c.conns[conn] = busy
	}
}

// closeConns ends every connection edge holds to the cell, so that a case starts on new ones.
func (c *faultCell) closeConns() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		conn.Close()
		delete(c.conns, conn)
	}
}

func (c *faultCell) serve(conn net.Conn) {
	defer func() {
		conn.Close()
		c.mu.Lock()
		delete(c.conns, conn)
		c.mu.Unlock()
	}()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		c.setBusy(conn, true)
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		id := req.Header.Get("X-Case")
		c.mu.Lock()
		c.seen[id]++
		c.mu.Unlock()
		if ms, _ := strconv.Atoi(req.Header.Get("X-Hold")); ms > 0 && !c.hold(conn, br, id, time.Duration(ms)*time.Millisecond) {
			return
		}
		if !c.answer(conn, req, id) {
			return
		}
		c.setBusy(conn, false)
	}
}

// hold waits d before the answer, watching the connection: false when edge closed it first (it
// gave up on the request: the case is abandoned) or the cell stops.
func (c *faultCell) hold(conn net.Conn, br *bufio.Reader, id string, d time.Duration) bool {
	peeked := make(chan error, 1)
	go func() {
		_, err := br.Peek(1)
		peeked <- err
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	closed := func(err error) bool {
		if err != nil && !isTimeoutErr(err) {
			c.mu.Lock()
			c.gone[id] = true
			c.mu.Unlock()
			return true
		}
		return false
	}
	select {
	case err := <-peeked:
		if closed(err) {
			return false
		}
		// Bytes before the answer (edge pipelined a request): hold on all the same.
		select {
		case <-timer.C:
			return true
		case <-c.stop:
			return false
		}
	case <-timer.C:
	case <-c.stop:
		return false
	}
	conn.SetReadDeadline(time.Unix(1, 0))
	err := <-peeked
	conn.SetReadDeadline(time.Time{})
	return !closed(err)
}

// caseBody is the whole answer's body for a case: the client checks it got its own.
func caseBody(id string) string {
	return `{"case":"` + id + `","pad":"` + strings.Repeat("p", 64) + `"}`
}

// bigAnswer is more than the kernel holds between a writer and a client that does not read (on
// loopback the sender's buffer alone grows to tcp_wmem's 4 MiB), so edge must wait on the client.
const bigAnswer = 16 << 20

// answer writes the case's answer (X-Answer) or its fault (X-Fault); false when the connection is
// done.
func (c *faultCell) answer(conn net.Conn, req *http.Request, id string) bool {
	p := faultPlan{id: id, fault: req.Header.Get("X-Fault"), body: caseBody(id), chunked: req.Header.Get("X-Answer") == "chunked"}
	if req.Header.Get("X-Answer") == "big" {
		p.body = strings.Repeat("b", bigAnswer)
	}
	return writeAnswer(conn, p)
}

func chunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

func firstPart(s string, chunked bool) string {
	if chunked {
		return chunk(s)
	}
	return s
}
