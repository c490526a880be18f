package integration

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// faultCell is a cell that writes HTTP by hand: each request says, in headers edge passes on
// unchanged, its case (X-Case), the fault to commit (X-Fault), how long to hold it first (X-Hold,
// ms) and the answer's form (X-Answer: chunked, big). It serves an agent's upstream port as well
// as a cell: only the headers drive it.
type faultCell struct {
	rawUpstream
	stop chan struct{}
}

func newFaultCell(t *testing.T) *faultCell {
	t.Helper()
	c := &faultCell{stop: make(chan struct{})}
	c.listen(t, c.serve)
	t.Cleanup(func() { close(c.stop) }) // runs before listen's cleanup: cleanups run in reverse
	return c
}

func (c *faultCell) serve(conn net.Conn, br *bufio.Reader, req *http.Request) bool {
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return false
	}
	id := req.Header.Get("X-Case")
	c.note(id)
	if ms, _ := strconv.Atoi(req.Header.Get("X-Hold")); ms > 0 && !c.hold(conn, br, id, time.Duration(ms)*time.Millisecond) {
		return false
	}
	return c.answer(conn, req, id)
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
			c.abandon(id)
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
