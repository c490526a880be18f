package integration

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
)

// droppedPath is the attacker's request: a job id of cell 2's range, no token. The cell ends it
// without an answer.
const droppedPath = "/api/v4/jobs/3999999/artifacts"

// TestClientDroppingRequestsRefusesNoOther is issue 24's acceptance: one client dropping requests
// (the cell closes the connection without answering them, as a handler that panics or a worker
// killed would) at 1 and at 10 a second for 60 s raises another runner's refused requests through
// the same healthy cell to at most 1%, and none of them is a 503. The two rates run in parallel,
// each with an edge and a cell of its own.
func TestClientDroppingRequestsRefusesNoOther(t *testing.T) {
	t.Parallel()
	for _, rate := range []int{1, 10} {
		t.Run(fmt.Sprintf("%d a second", rate), func(t *testing.T) {
			t.Parallel()
			droppingClient(t, rate, 60*time.Second)
		})
	}
}

// droppingClient runs an attacker at rate requests a second and a runner polling and asking for
// discovery 20 times a second, for d, through one edge to a checked, healthy cell 2.
func droppingClient(t *testing.T, rate int, d time.Duration) {
	cell, err := cellsim.New(cellsim.Options{CellID: 2, JobIDBase: jobIDBase(2), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	token := runnerToken(t, 2)
	cell.AcceptToken(token)
	handler := cell.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != droppedPath {
			handler.ServeHTTP(w, r)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, envOptions{config: func(c *edgeConfig) {
		c.Cells[1].URL = srv.URL
		c.Cells[1].Health = &healthConfig{Interval: "1s", Timeout: "500ms", UnhealthyAfter: 2}
	}})

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	attacks, attackAnswers := 0, map[int]int{}
	wg.Go(func() {
		client := newClient(4)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			a, err := trySend(ctx, client, e.edge.PublicURL, outgoing{method: "GET", path: droppedPath})
			if ctx.Err() != nil {
				return
			}
			attacks++
			if err != nil {
				attackAnswers[0]++
				continue
			}
			attackAnswers[a.status]++
		}
	})

	v := runner1711()
	requests := []outgoing{v.requestJob(token, ""), v.discovery(token)}
	for _, o := range requests {
		e.noteTokens(o)
	}
	client := newClient(4)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	total, refused, unavailable := 0, 0, 0
	var firstRefusals []string
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
		a, err := trySend(ctx, client, e.edge.PublicURL, requests[i%len(requests)])
		if ctx.Err() != nil {
			break
		}
		total++
		if err == nil && a.status/100 == 2 {
			continue
		}
		refused++
		if err == nil && a.status == http.StatusServiceUnavailable {
			unavailable++
		}
		if len(firstRefusals) < 5 {
			firstRefusals = append(firstRefusals, fmt.Sprintf("%d %s %v", a.status, strings.TrimSpace(string(a.body)), err))
		}
	}
	wg.Wait()

	metrics := e.edge.OpsURL + "/metrics"
	gateway, _ := metricSum(metrics, "edge_cell_ejections_total", `evidence="gateway"`)
	connect, _ := metricSum(metrics, "edge_cell_ejections_total", `evidence="connect"`)
	share := 100 * float64(refused) / float64(max(total, 1))
	t.Logf("attacker at %d/s: %d requests dropped (edge answered %v); the other runner: %d requests, %d refused (%.2f%%), %d of them 503; ejections: %v gateway, %v connect",
		rate, attacks, attackAnswers, total, refused, share, unavailable, gateway, connect)
	if total < int(d/(50*time.Millisecond))/2 {
		t.Errorf("the other runner sent only %d requests in %v", total, d)
	}
	if attacks < int(d.Seconds())*rate/2 || attackAnswers[http.StatusBadGateway] == 0 {
		t.Errorf("the attacker sent %d requests (%v), want about %d dropped and answered 502", attacks, attackAnswers, int(d.Seconds())*rate)
	}
	if unavailable != 0 || refused*100 > total {
		t.Errorf("the other runner: %d of %d refused (%.2f%%), %d of them 503; want at most 1%% and no 503; first: %q",
			refused, total, share, unavailable, firstRefusals)
	}
}
