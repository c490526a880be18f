package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

// What a request is, as the report counts them.
const (
	kindPoll      = "jobs/request"   // a runner's long poll
	kindTrace     = "jobs/:id/trace" // a runner's PATCH of the job log
	kindFinish    = "jobs/:id"       // a runner's PUT state=success
	kindWorkspace = "workspace"      // a request through the API for GitLab to an agent's upstream
	// kindResetPoll is a job request of the runner-reset-parked fault: sent on a raw connection,
	// held by the cell (parked by edge), then reset by the runner (SO_LINGER 0); OK when it was.
	kindResetPoll = "jobs/request reset while parked"
)

// Who made an answer: the soak cells and upstreams name themselves in a header, so an answer
// without one was made by edge (or, for workspace requests, by the agent, whose errors come from
// the same writer as edge's).
const (
	sourceCell     = "cell"
	sourceUpstream = "upstream"
	sourceEdge     = "edge"
	sourceNone     = "none"  // no answer: a transport error
	sourceReset    = "reset" // no answer: the runner reset the connection itself (kindResetPoll)
)

// attempt is one request the soak sent and what came of it.
type attempt struct {
	Kind     string
	Method   string
	Req      string // its Soak-Request-Id
	Edge     int    // 1..3
	Start    time.Time
	End      time.Time
	Status   int    // 0: no answer
	Source   string // sourceCell, ...
	Cause    string // edge's error cause, or the transport error's kind
	OK       bool   // the answer the soak wanted (or one a retry makes good, like a 416 for a trace already sent)
	Detail   string // for a failure: the message, edge's request id
	RunnerID int    // runner loops: which runner
	Org      uint64 // its runner's organization
	// Conns is how many connections the client's transport took for it: more than one means
	// Go's transport sent it again itself (a GET on a reused connection that closed without an
	// answer), so a cell or upstream seeing its id twice is the client's doing, not edge's.
	Conns int
}

// recorder keeps every attempt.
type recorder struct {
	mu       sync.Mutex
	attempts []attempt
	seq      atomic.Uint64
	prefix   string
}

func newRecorder(seed int64) *recorder {
	return &recorder{prefix: fmt.Sprintf("s%d-", seed)}
}

// nextID is a request id unique in the run.
func (r *recorder) nextID() string {
	return r.prefix + fmt.Sprint(r.seq.Add(1))
}

func (r *recorder) add(a attempt) {
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
}

func (r *recorder) all() []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attempt(nil), r.attempts...)
}

// counts are totals for the progress line.
func (r *recorder) counts() (total, failed, edge5xx int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.attempts {
		total++
		if !a.OK {
			failed++
		}
		if a.Source == sourceEdge && a.Status >= 500 {
			edge5xx++
		}
	}
	return total, failed, edge5xx
}

// exchange is one request's answer, read whole.
type exchange struct {
	resp *http.Response
	body []byte
	a    attempt
}

// send sends req (its request id set here) and reads the answer, filling in who made it and,
// for an answer edge made, the cause it names. It does not record: the caller judges OK first.
func send(client *http.Client, rec *recorder, kind string, edge int, req *http.Request) exchange {
	id := rec.nextID()
	req.Header.Set(bench.RequestIDHeader, id)
	a := attempt{Kind: kind, Method: req.Method, Req: id, Edge: edge, Start: time.Now()}
	var conns atomic.Int32
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { conns.Add(1) },
	}))
	resp, err := client.Do(req)
	if err != nil {
		a.End = time.Now()
		a.Source, a.Cause, a.Detail = sourceNone, transportCause(err), err.Error()
		a.Conns = int(conns.Load())
		return exchange{a: a}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	a.End = time.Now()
	classify(&a, resp, body, err)
	a.Conns = int(conns.Load())
	return exchange{resp: resp, body: body, a: a}
}

// classify fills in an answer's status, who made it and, for an answer edge made, the cause it
// names; bodyErr is the error reading its body.
func classify(a *attempt, resp *http.Response, body []byte, bodyErr error) {
	a.Status = resp.StatusCode
	switch {
	case resp.Header.Get("Soak-Cell") != "":
		a.Source = sourceCell
	case resp.Header.Get(UpstreamHeader) != "":
		a.Source = sourceUpstream
	default:
		a.Source = sourceEdge
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			a.Cause = e.Error
			a.Detail = e.Message
		} else if resp.StatusCode >= 400 {
			a.Cause = "no JSON error body"
			a.Detail = truncate(string(body), 120)
		}
		if rid := resp.Header.Get("X-Request-Id"); rid != "" && resp.StatusCode >= 400 {
			a.Detail += " (X-Request-Id " + rid + ")"
		}
	}
	if bodyErr != nil {
		// The answer's head came but its body did not: the exchange failed all the same.
		a.Status, a.Source, a.Cause, a.Detail = 0, sourceNone, "body: "+transportCause(bodyErr), bodyErr.Error()
	}
}

// transportCause names a transport error by its kind, for the report's tables.
func transportCause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return truncate(s, 60)
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
