package integration

import (
	"context"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestLongPolls holds 1,000 job requests at a cell for 30 s through edge: every one is answered
// 204 by the cell, none is retried or cut by edge's limits, and a SIGTERM in the middle lets them
// all finish (shutdown.grace 40s) before edge exits 0.
func TestLongPolls(t *testing.T) {
	t.Parallel()
	for _, sigterm := range []bool{false, true} {
		name := "held"
		if sigterm {
			name = "sigterm while held"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runLongPolls(t, sigterm)
		})
	}
}

func runLongPolls(t *testing.T, sigterm bool) {
	const (
		polls    = 1000
		longPoll = 30 * time.Second
	)
	e := newEnv(t, envOptions{longPoll: longPoll, config: func(c *edgeConfig) {
		c.Shutdown.Grace = "40s"
		c.Routing.LongPollTimeout = "65s"
	}})
	cell := e.cell(2)
	client := newClient(polls + 100)
	defer client.CloseIdleConnections()
	value := cell.QueueValue()
	jobPoll := runner1711().requestJob(runnerToken(t, 2), value)
	e.noteTokens(jobPoll)

	type result struct {
		a   answer
		err error
		at  time.Duration
	}
	results := make(chan result, polls)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range polls {
		go func() {
			a, err := trySend(ctx, client, e.edge.PublicURL, jobPoll)
			results <- result{a, err, time.Since(start)}
		}()
	}
	poll.Until(t, time.Minute, fmt.Sprintf("%d job requests held at the cell", polls), func() bool { return cell.Held() == polls })
	t.Logf("%d job requests held after %v", polls, time.Since(start))
	// Held at the cell, each is parked off edge's HTTP server, as /metrics shows.
	poll.Until(t, 10*time.Second, fmt.Sprintf("edge_parked_polls at %d", polls), func() bool {
		n, err := metricSum(e.edge.OpsURL+"/metrics", "edge_parked_polls", "")
		return err == nil && n == polls
	})

	if sigterm {
		// Every poll is held at the cell (waited for above): the SIGTERM arrives while they are.
		if err := e.edge.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		poll.Until(t, 20*time.Second, "/readyz to answer 503 while draining", func() bool {
			res, err := http.Get(e.edge.OpsURL + "/readyz")
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == http.StatusServiceUnavailable
		})
		// What the alert on a drain that lasts too long reads.
		if n, err := metricSum(e.edge.OpsURL+"/metrics", "edge_draining", ""); err != nil || n != 1 {
			t.Errorf("edge_draining while draining: %v %v, want 1", n, err)
		}
	}

	var failures []string
	for range polls {
		r := <-results
		switch {
		case r.err != nil:
			failures = append(failures, r.err.Error())
		case r.a.status != http.StatusNoContent:
			failures = append(failures, fmt.Sprintf("status %d: %s", r.a.status, redactTokens(r.a.body)))
		case r.a.header.Get("X-GitLab-Last-Update") != value:
			failures = append(failures, fmt.Sprintf("X-GitLab-Last-Update %q", r.a.header.Get("X-GitLab-Last-Update")))
		case r.at < longPoll:
			failures = append(failures, fmt.Sprintf("answered after %v, before the cell's %v long poll", r.at, longPoll))
		}
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d long polls failed; first: %v", len(failures), polls, failures[:min(5, len(failures))])
	}
	isJobRequest := func(r cellsim.Record) bool { return r.Route == cellsim.RouteJobRequest }
	if n := cell.Count(isJobRequest); n != polls {
		t.Errorf("job requests at the cell: got %d, want exactly %d (none retried)", n, polls)
	}
	if n := cell.Count(func(r cellsim.Record) bool {
		return isJobRequest(r) && (r.Canceled || r.Status != http.StatusNoContent)
	}); n != 0 {
		t.Errorf("job requests the cell could not answer 204: %d", n)
	}
	for _, other := range []uint64{1, 3} {
		if n := len(e.cell(other).Records()); n != 0 {
			t.Errorf("requests at cell %d: got %d, want 0", other, n)
		}
	}
	if sigterm {
		code, err := e.edge.wait(30 * time.Second)
		if err != nil || code != 0 {
			t.Errorf("edge after SIGTERM: exit code %d (%v), want 0", code, err)
		}
	}
}
