package integration

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// faultUpstream writes HTTP by hand with faultCell's writer (writeAnswer), but learns each
// request's case and fault from plan, which reads the request as it came (its path, its body) and
// what the test set for the case, where faultCell reads the client's headers: the requests edge
// makes itself (a call to an admission controller, failing a job at its cell, a member's part of
// a list) carry none of them.
type faultUpstream struct {
	rawUpstream
	plan func(req *http.Request, body []byte) faultPlan
}

func newFaultUpstream(t *testing.T, plan func(req *http.Request, body []byte) faultPlan) *faultUpstream {
	t.Helper()
	u := &faultUpstream{plan: plan}
	u.listen(t, u.serve)
	return u
}

func (u *faultUpstream) serve(conn net.Conn, br *bufio.Reader, req *http.Request) bool {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return false
	}
	p := u.plan(req, body)
	u.note(p.id)
	if p.hold > 0 && !u.holdOrAbandon(conn, br, p.id, p.hold) {
		return false
	}
	return writeAnswer(conn, p)
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
