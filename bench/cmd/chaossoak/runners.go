package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"gitlab.com/edge/edge/bench"
)

// runner is one runner loop: a gitlab-runner with one runner token, routed to one cell, of one
// organization (orgOf).
type runner struct {
	idx        int
	cell       uint64
	org        uint64
	token      string
	rng        *rand.Rand
	lastUpdate string // X-GitLab-Last-Update of the last answer, sent back as last_update
}

// receipt is a job as a runner got it.
type receipt struct {
	ID         uint64
	Runner     int
	Org        uint64 // the runner's organization
	Req        string // the job request that got it
	Edge       int
	At         time.Time
	Cell       uint64
	Finished   bool   // the cell answered the PUT state=success with Job-Status success
	Abandoned  string // why the runner gave up on it (the soak was stopped)
	token      string
	finishedAt time.Time
}

func newRunners(n int, seed int64) ([]*runner, error) {
	out := make([]*runner, n)
	for i := range out {
		cell := uint64(i%3 + 1)
		r, err := newRunner(i+1, cell, orgOf(cell, i/3), rand.New(rand.NewPCG(uint64(seed), uint64(1000+i))), rand.New(rand.NewPCG(uint64(seed), uint64(100+i))))
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// stayOrg is the organization of cell 2 that stays there while moveOrg moves: the cell keeps
// runners, so its queue drains and a fault that needs a poll held there finds one.
const stayOrg = 4

// orgOf is the organization of the nth runner of cell: the cell's number (o:N with c:N), but
// every second runner of the moving organization's cell is of stayOrg.
func orgOf(cell uint64, nth int) uint64 {
	if cell == moveHome && nth%2 == 1 {
		return stayOrg
	}
	return cell
}

// newRunner is runner idx of cell and org, its token's random part drawn from seedRand.
func newRunner(idx int, cell, org uint64, seedRand, rng *rand.Rand) (*runner, error) {
	var random [16]byte
	for j := range random {
		random[j] = byte(seedRand.UintN(256))
	}
	tok, err := bench.MintRoutable("glrt-t1_", random, map[string]int64{"c": int64(cell), "o": int64(org)})
	if err != nil {
		return nil, err
	}
	return &runner{idx: idx, cell: cell, org: org, token: tok, rng: rng}, nil
}

// pollBody is a runner's job request body.
func pollBody(r *runner) []byte {
	body, _ := json.Marshal(map[string]any{"token": r.token, "last_update": r.lastUpdate,
		"info": map[string]any{"name": fmt.Sprintf("chaossoak-runner-%d", r.idx), "features": map[string]bool{"trace_checksum": false}}})
	return body
}

// runRunner polls for jobs and works each one it gets, until stop is set (checked between polls,
// so a runner never walks away from a job or a held poll) or ctx ends.
func (s *soak) runRunner(ctx context.Context, r *runner, stop *atomic.Bool) {
	for !stop.Load() && ctx.Err() == nil {
		rc, wait := s.poll(ctx, r)
		if rc != nil {
			s.busy.Add(1)
			s.work(ctx, r, rc)
			s.busy.Add(-1)
			continue
		}
		_ = sleep(ctx, wait)
	}
}

func (s *soak) edgeURL(i int, path string) string {
	return "http://" + s.c.edges[i].public + path
}

// poll sends one POST /api/v4/jobs/request through a random edge; a job, or how long to wait
// before the next poll.
func (s *soak) poll(ctx context.Context, r *runner) (*receipt, time.Duration) {
	edge := r.rng.IntN(3)
	body := pollBody(r)
	pctx, cancel := context.WithTimeout(ctx, s.o.longPoll+70*time.Second) // edge's long_poll_timeout is 65 s
	defer cancel()
	req, _ := http.NewRequestWithContext(pctx, http.MethodPost, s.edgeURL(edge, "/api/v4/jobs/request"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	ex := send(s.client, s.rec, kindPoll, edge+1, req)
	a := ex.a
	wait := backoff(ex)
	var h http.Header
	if ex.resp != nil {
		h = ex.resp.Header
	}
	got := s.takeAnswer(&a, r, h, ex.body)
	if a.OK && got == nil && a.Source == sourceCell {
		wait = 0 // the cell held the poll as long as it wanted: poll again at once
	}
	s.rec.add(a)
	return got, wait
}

// takeAnswer judges a job request's answer as a runner does and returns the job it hands out
// (noted as received): a 201 with a job, or a 204 (its X-GitLab-Last-Update kept); anything
// else leaves a not OK.
func (s *soak) takeAnswer(a *attempt, r *runner, h http.Header, body []byte) *receipt {
	a.RunnerID, a.Org = r.idx, r.org
	switch {
	case a.Source == sourceCell && a.Status == http.StatusCreated:
		var job struct {
			ID    uint64 `json:"id"`
			Token string `json:"token"`
		}
		if err := json.Unmarshal(body, &job); err != nil || job.ID == 0 || job.Token == "" {
			a.Detail = fmt.Sprintf("a 201 without a job: %v", err)
			return nil
		}
		a.OK = true
		got := &receipt{ID: job.ID, Runner: r.idx, Org: r.org, Req: a.Req, Edge: a.Edge, At: a.End, Cell: job.ID / cellIDBase, token: job.Token}
		s.received(got)
		return got
	case a.Source == sourceCell && a.Status == http.StatusNoContent:
		a.OK = true
		r.lastUpdate = h.Get("X-GitLab-Last-Update")
	case a.Source == sourceEdge && a.Status == http.StatusNoContent && h.Get("Retry-After") != "":
		// Held back: the runner's organization is frozen for a move. Judged by the move's checks.
		a.OK = true
	}
	return nil
}

// backoff is how long a runner waits after a failed request: the answer's Retry-After (at most
// 5 s), 200 ms after no answer (the edge is down: another is drawn next time), else 1 s.
func backoff(ex exchange) time.Duration {
	if ex.resp == nil {
		return 200 * time.Millisecond
	}
	if ra, err := strconv.Atoi(ex.resp.Header.Get("Retry-After")); err == nil && ra > 0 {
		return min(time.Duration(ra)*time.Second, 5*time.Second)
	}
	return time.Second
}

// work runs a job as gitlab-runner does, shortened: send the log, "run" for a moment, report
// success. Each call is retried (through another random edge) until the cell takes it.
func (s *soak) work(ctx context.Context, r *runner, rc *receipt) {
	id := rc.ID
	trace := fmt.Sprintf("chaossoak: runner %d ran job %d\n", r.idx, id)
	for {
		if ctx.Err() != nil {
			s.abandon(id, "stopped while sending the trace")
			return
		}
		edge := r.rng.IntN(3)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, s.edgeURL(edge, fmt.Sprintf("/api/v4/jobs/%d/trace", id)), strings.NewReader(trace))
		req.Header.Set("JOB-TOKEN", rc.token)
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Content-Range", fmt.Sprintf("0-%d", len(trace)-1))
		ex := send(s.client, s.rec, kindTrace, edge+1, req)
		a := ex.a
		a.RunnerID, a.Org = r.idx, r.org
		// 416 with the whole trace in Range: an earlier PATCH got there and its answer was lost.
		a.OK = a.Source == sourceCell && (a.Status == http.StatusAccepted ||
			a.Status == http.StatusRequestedRangeNotSatisfiable && ex.resp.Header.Get("Range") == fmt.Sprintf("0-%d", len(trace)))
		s.rec.add(a)
		if a.OK {
			break
		}
		_ = sleep(ctx, backoff(ex))
	}
	_ = sleep(ctx, time.Duration(200+r.rng.IntN(1000))*time.Millisecond)
	body, _ := json.Marshal(map[string]string{"token": rc.token, "state": "success"})
	for {
		if ctx.Err() != nil {
			s.abandon(id, "stopped while reporting success")
			return
		}
		edge := r.rng.IntN(3)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, s.edgeURL(edge, fmt.Sprintf("/api/v4/jobs/%d", id)), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		ex := send(s.client, s.rec, kindFinish, edge+1, req)
		a := ex.a
		a.RunnerID, a.Org = r.idx, r.org
		a.OK = a.Source == sourceCell && a.Status == http.StatusOK && ex.resp.Header.Get("Job-Status") == "success"
		s.rec.add(a)
		if a.OK {
			s.finished(id)
			return
		}
		_ = sleep(ctx, backoff(ex))
	}
}

// received notes a job a runner got.
func (s *soak) received(rc *receipt) {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	s.receipts[rc.ID] = append(s.receipts[rc.ID], rc)
}

func (s *soak) finished(id uint64) {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	for _, rc := range s.receipts[id] {
		rc.Finished, rc.finishedAt = true, time.Now()
	}
}

func (s *soak) abandon(id uint64, why string) {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	for _, rc := range s.receipts[id] {
		if !rc.Finished {
			rc.Abandoned = why
		}
	}
}

// produce queues jobs at -jobs per second on random cells through their control listeners
// (not through edge: it is GitLab creating pipelines) until until. A cell that is down refuses;
// its id is not used again.
func (s *soak) produce(ctx context.Context, rng *rand.Rand, until time.Time) {
	every := time.Duration(float64(time.Second) / s.o.jobRate)
	next := time.Now()
	for ctx.Err() == nil && time.Now().Before(until) {
		i := rng.IntN(3)
		s.jobsMu.Lock()
		s.nextJob[i]++
		id := uint64(i+1)*cellIDBase + s.nextJob[i]
		s.jobsMu.Unlock()
		err := s.queue(ctx, i, id)
		s.jobsMu.Lock()
		if err != nil {
			s.queueRefused++
		} else {
			s.queued[id] = time.Now()
		}
		s.jobsMu.Unlock()
		next = next.Add(every)
		_ = sleep(ctx, time.Until(next))
	}
}

func (s *soak) queue(ctx context.Context, i int, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.c.cells[i].control+"/jobs", strings.NewReader(fmt.Sprintf(`{"ids":[%d]}`, id)))
	resp, err := s.c.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("queue job %d: %s", id, resp.Status)
	}
	return nil
}

// cellStats is a soak cell's GET /stats.
type cellStats struct {
	Pending  int `json:"pending"`
	Running  int `json:"running"`
	Finished int `json:"finished"`
	Held     int `json:"held"`
}

func (s *soak) cellStats(ctx context.Context, i int) (cellStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.c.cells[i].control+"/stats", nil)
	resp, err := s.c.http.Do(req)
	if err != nil {
		return cellStats{}, err
	}
	defer resp.Body.Close()
	var st cellStats
	return st, json.NewDecoder(resp.Body).Decode(&st)
}
