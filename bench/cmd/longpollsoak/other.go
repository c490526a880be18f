package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// otherTally counts the other runner traffic of one client.
type otherTally struct {
	Sent    int            `json:"sent"`
	OK      int            `json:"ok"`     // 2xx from a cell
	Errors  int            `json:"errors"` // no answer or not 2xx
	Edge5xx int            `json:"edge_5xx"`
	Late    int            `json:"late"` // not sent: every connection was busy for a whole backlog
	Status  map[string]int `json:"status"`
	Seconds float64        `json:"seconds"` // how long it ran
	Samples []string       `json:"samples"`
}

func (t *otherTally) merge(o otherTally) {
	t.Sent += o.Sent
	t.OK += o.OK
	t.Errors += o.Errors
	t.Edge5xx += o.Edge5xx
	t.Late += o.Late
	t.Seconds = max(t.Seconds, o.Seconds)
	for k, v := range o.Status {
		if t.Status == nil {
			t.Status = map[string]int{}
		}
		t.Status[k] += v
	}
	for _, s := range o.Samples {
		if len(t.Samples) < maxSamples {
			t.Samples = append(t.Samples, s)
		}
	}
}

// otherRequest is one kind of runner request besides the long poll.
type otherRequest struct {
	method, path string
	header       map[string]string
	body         string
	cell         string // the cell listener edge must send it to
}

// otherRequests are what a runner and its jobs send while a long poll waits, each routed by a
// different rule: a runner token in the body and a personal access token in a header (cell 2),
// an opaque job token in a header and in a body (the legacy cell).
func otherRequests(job clientJob) []otherRequest {
	return []otherRequest{
		{method: "POST", path: "/api/v4/runners/verify", body: `{"token":"` + job.RunnerTok + `"}`, cell: "cell2"},
		{method: "GET", path: "/api/v4/jobs/123", header: map[string]string{"JOB-TOKEN": job.JobTok}, cell: "legacy"},
		{method: "GET", path: "/api/v4/jobs/123", header: map[string]string{"PRIVATE-TOKEN": job.PATTok}, cell: "cell2"},
		{method: "PUT", path: "/api/v4/jobs/123", body: `{"token":"` + job.JobTok + `","state":"running"}`, cell: "legacy"},
	}
}

// runOther sends RPS requests a second from Start to OtherEnd over Conns keep-alive
// connections. A pacer hands out one slot per request at the rate; a slot no connection takes
// within the backlog counts as late, so a slow edge shows as fewer req/s, not as a burst later.
func runOther(ctx context.Context, job clientJob) otherTally {
	if job.RPS <= 0 || job.Conns <= 0 {
		return otherTally{}
	}
	kinds := otherRequests(job)
	backlog := max(job.Conns, int(job.RPS/10)) // 100 ms of requests
	slots := make(chan int, backlog)
	tallies := make([]otherTally, job.Conns)
	var wg sync.WaitGroup
	for w := range job.Conns {
		client := &http.Client{Transport: &http.Transport{
			MaxConnsPerHost:     1,
			MaxIdleConnsPerHost: 1,
			DisableCompression:  true,
		}}
		wg.Go(func() {
			defer client.CloseIdleConnections()
			for n := range slots {
				tallies[w].add(sendOther(ctx, client, job.Edge, kinds[n%len(kinds)]))
			}
		})
	}
	late := pace(ctx, job, slots)
	close(slots)
	wg.Wait()
	var t otherTally
	for _, w := range tallies {
		t.merge(w)
	}
	t.Late = late
	t.Seconds = job.OtherEnd.Sub(job.Start).Seconds()
	return t
}

// pace puts request numbers into slots at job.RPS until OtherEnd and returns how many found
// the backlog full.
func pace(ctx context.Context, job clientJob, slots chan<- int) (late int) {
	if waitUntil(ctx, job.Start) != nil {
		return 0
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for {
		now := time.Now()
		if now.After(job.OtherEnd) {
			now = job.OtherEnd
		}
		due := int(now.Sub(job.Start).Seconds() * job.RPS)
		for ; n < due; n++ {
			select {
			case slots <- n:
			default:
				late++
			}
		}
		if !now.Before(job.OtherEnd) {
			return late
		}
		select {
		case <-ctx.Done():
			return late
		case <-tick.C:
		}
	}
}

type otherOutcome struct {
	err      error
	status   int
	upstream string
}

func (t *otherTally) add(o otherOutcome) {
	t.Sent++
	if o.err != nil {
		t.Errors++
		if len(t.Samples) < maxSamples {
			t.Samples = append(t.Samples, o.err.Error())
		}
		return
	}
	if t.Status == nil {
		t.Status = map[string]int{}
	}
	t.Status[strconv.Itoa(o.status)]++
	if isEdge5xx(o.status, o.upstream) {
		t.Edge5xx++
	}
	if o.status/100 == 2 && o.upstream != "" {
		t.OK++
		return
	}
	t.Errors++
	if len(t.Samples) < maxSamples {
		t.Samples = append(t.Samples, fmt.Sprintf("status %d from %q", o.status, o.upstream))
	}
}

func sendOther(ctx context.Context, client *http.Client, edge string, r otherRequest) otherOutcome {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, "http://"+edge+r.path, body)
	if err != nil {
		return otherOutcome{err: fmt.Errorf("new request: %w", err)}
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return otherOutcome{err: err}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return otherOutcome{status: resp.StatusCode, upstream: resp.Header.Get(upstreamHeader)}
}
