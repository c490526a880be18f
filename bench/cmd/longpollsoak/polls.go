package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// pollTally counts what the long polls of one client got.
type pollTally struct {
	Sent        int            `json:"sent"`         // requests written
	Answered    int            `json:"answered"`     // got an HTTP answer
	Answered204 int            `json:"answered_204"` // 204 from cell 2
	Status      map[string]int `json:"status"`       // answers by status code
	Errors      int            `json:"errors"`       // no answer, or an answer that is not 204 from cell 2
	Edge5xx     int            `json:"edge_5xx"`     // 5xx made by edge (no cell header)
	Samples     []string       `json:"samples"`      // the first few errors
}

// pollOutcome is one long poll's end.
type pollOutcome struct {
	sent     bool
	err      error  // no answer
	status   int    // the answer's
	upstream string // the cell listener that answered; "" when edge did
	body     string // the start of the answer's body
}

const maxSamples = 10

func (t *pollTally) add(o pollOutcome) {
	if o.sent {
		t.Sent++
	}
	if o.err != nil {
		t.Errors++
		t.sample(o.err.Error())
		return
	}
	t.Answered++
	if t.Status == nil {
		t.Status = map[string]int{}
	}
	t.Status[strconv.Itoa(o.status)]++
	if isEdge5xx(o.status, o.upstream) {
		t.Edge5xx++
	}
	if o.status == http.StatusNoContent && o.upstream == "cell2" {
		t.Answered204++
		return
	}
	t.Errors++
	t.sample(fmt.Sprintf("status %d from %q: %.200s", o.status, o.upstream, o.body))
}

func (t *pollTally) sample(s string) {
	if len(t.Samples) < maxSamples {
		t.Samples = append(t.Samples, s)
	}
}

func (t *pollTally) merge(o pollTally) {
	t.Sent += o.Sent
	t.Answered += o.Answered
	t.Answered204 += o.Answered204
	t.Errors += o.Errors
	t.Edge5xx += o.Edge5xx
	for k, v := range o.Status {
		if t.Status == nil {
			t.Status = map[string]int{}
		}
		t.Status[k] += v
	}
	for _, s := range o.Samples {
		t.sample(s)
	}
}

// isEdge5xx tells a 5xx edge made (its JSON error, no cell header) from one a cell sent through.
func isEdge5xx(status int, upstream string) bool {
	return status >= 500 && upstream == ""
}

// runPolls opens the client's long polls at PollRate from Start, each on a connection of its
// own, and waits for every one to be answered or the deadline.
func runPolls(ctx context.Context, job clientJob) pollTally {
	outcomes := make(chan pollOutcome, job.Polls)
	var wg sync.WaitGroup
	for i := range job.Polls {
		at := job.Start.Add(time.Duration(float64(i) / job.PollRate * float64(time.Second)))
		if waitUntil(ctx, at) != nil {
			break
		}
		id := fmt.Sprintf("%s-%d", job.IDPrefix, job.FirstPoll+i)
		wg.Go(func() { outcomes <- longPoll(ctx, job, id) })
	}
	wg.Wait()
	close(outcomes)
	var t pollTally
	opened := 0
	for o := range outcomes {
		t.add(o)
		opened++
	}
	// Polls never opened (the soak was interrupted) are errors too.
	if missing := job.Polls - opened; missing > 0 {
		t.Errors += missing
		t.sample(fmt.Sprintf("%d polls not opened: %v", missing, context.Cause(ctx)))
	}
	return t
}

// longPoll sends one POST /api/v4/jobs/request on a new connection and reads the answer. It
// writes the request itself on a plain TCP connection: no client library in between can retry
// it, pool it or open a second connection.
func longPoll(ctx context.Context, job clientJob, id string) pollOutcome {
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", job.Edge)
	if err != nil {
		return pollOutcome{err: fmt.Errorf("dial: %w", err)}
	}
	defer conn.Close()
	// The deadline of ctx unblocks the read below.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	body := `{"token":"` + job.RunnerTok + `","last_update":"longpollsoak"}`
	req := "POST /api/v4/jobs/request HTTP/1.1\r\n" +
		"Host: " + job.Edge + "\r\n" +
		"User-Agent: gitlab-runner 17.11.0 (longpollsoak)\r\n" +
		"Content-Type: application/json\r\n" +
		"Accept: application/json\r\n" +
		pollIDHeader + ": " + id + "\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		return pollOutcome{err: fmt.Errorf("write: %w", err)}
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 1024), nil)
	if err != nil {
		return pollOutcome{sent: true, err: fmt.Errorf("read the answer: %w", err)}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	return pollOutcome{sent: true, status: resp.StatusCode, upstream: resp.Header.Get(upstreamHeader), body: string(b)}
}
