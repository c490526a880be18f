package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The organization the soak moves while the chaos runs: its runners' tokens say o:2 and c:2. It
// moves to cell 3 (freeze, then switched), back to cell 2 the same way, and its move is forgotten,
// as GitLab's migration tooling would call edge (through any edge, again through another when one
// does not answer).
const (
	moveOrg  = 2
	moveHome = 2
	moveAway = 3
)

// movePlan is when each step is taken, as a share of the chaos's duration.
var movePlan = []struct {
	at    float64
	cell  uint64
	phase string
}{
	{0.20, moveAway, phaseFreeze}, {0.32, moveAway, phaseSwitched},
	{0.55, moveHome, phaseFreeze}, {0.67, moveHome, phaseSwitched},
	{0.85, 0, phaseForget},
}

const (
	phaseFreeze   = "freeze"
	phaseSwitched = "switched"
	phaseForget   = "forget" // DELETE: the move's record ends
)

// moveFollowed bounds how long every edge may take to follow a step (the 1 s).
const moveFollowed = time.Second

// moveStep is one call of the move and when the edges followed it.
type moveStep struct {
	N     int       `json:"n"`
	Cell  uint64    `json:"cell,omitempty"`
	Phase string    `json:"phase"`
	Asked time.Time `json:"-"` // the first call sent
	Done  time.Time `json:"-"` // an edge answered 200 (204 to forget); zero: never
	// Seen is when every edge that answered its status page listed the step (zero: not within
	// 10 s); Missed names the edges that did not answer then (down).
	Seen   time.Time `json:"-"`
	Missed []string  `json:"edges_down,omitempty"`
	Tries  int       `json:"calls"`
	Err    string    `json:"error,omitempty"`
}

// runMove takes the plan's steps between start and until.
func (s *soak) runMove(ctx context.Context, start, until time.Time) {
	d := until.Sub(start)
	for i, p := range movePlan {
		if sleep(ctx, time.Until(start.Add(time.Duration(p.at*float64(d))))) != nil {
			return
		}
		st := &moveStep{N: i + 1, Cell: p.cell, Phase: p.phase}
		s.moves.add(st)
		s.takeStep(ctx, st)
	}
}

// takeStep calls edge's API for GitLab until an edge takes the step, then waits for every edge
// up to list it.
func (s *soak) takeStep(ctx context.Context, st *moveStep) {
	what := fmt.Sprintf("organization %d to cell %d, %s", moveOrg, st.Cell, st.Phase)
	if st.Phase == phaseForget {
		what = fmt.Sprintf("forget organization %d's move", moveOrg)
	}
	logf(s.out, "move %d: %s", st.N, what)
	s.moves.update(st, func(st *moveStep) { st.Asked = time.Now() })
	for edge := 0; ; edge = (edge + 1) % len(s.c.edges) {
		err := s.callMove(ctx, edge, st)
		s.moves.update(st, func(st *moveStep) {
			st.Tries++
			if err != nil {
				st.Err = err.Error()
			} else {
				st.Done, st.Err = time.Now(), ""
			}
		})
		if err == nil {
			break
		}
		if sleep(ctx, 500*time.Millisecond) != nil {
			return
		}
	}
	var missed []string
	err := waitFor(ctx, 10*time.Second, func() bool {
		missed = missed[:0]
		for i, es := range s.c.edges {
			listed, err := s.edgeListsStep(ctx, i, st)
			if err != nil {
				missed = append(missed, es.name)
				continue
			}
			if !listed {
				return false
			}
		}
		return true
	})
	snap := s.moves.get(st)
	if err != nil {
		logf(s.out, "move %d: taken after %d calls, not followed by every edge within 10 s", st.N, snap.Tries)
		return
	}
	s.moves.update(st, func(st *moveStep) { st.Seen, st.Missed = time.Now(), missed })
	snap = s.moves.get(st)
	logf(s.out, "move %d: taken after %d calls (%.1fs), followed by every edge up %.0f ms later (down: %s)", st.N, snap.Tries,
		snap.Done.Sub(snap.Asked).Seconds(), float64(snap.Seen.Sub(snap.Done).Microseconds())/1000, orNone(snap.Missed))
}

// callMove is one PUT (or DELETE) of the step through edge i's public listener.
func (s *soak) callMove(ctx context.Context, i int, st *moveStep) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := s.edgeURL(i, fmt.Sprintf("/-/api/v1/organizations/%d/cell", moveOrg))
	method, body, want := http.MethodPut, fmt.Sprintf(`{"cell":%d,"phase":%q}`, st.Cell, st.Phase), http.StatusOK
	if st.Phase == phaseForget {
		method, body, want = http.MethodDelete, "", http.StatusNoContent
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.c.apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("edge%d: %s %s", i+1, resp.Status, e.Error)
	}
	return nil
}

// edgeListsStep says whether edge i's status page shows the organization as the step left it.
func (s *soak) edgeListsStep(ctx context.Context, i int, st *moveStep) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.c.edges[i].ops+"/status.json", nil)
	resp, err := s.c.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var status struct {
		Moves []struct {
			Org   uint64 `json:"org_id"`
			Cell  uint64 `json:"cell"`
			Phase string `json:"phase"`
		} `json:"org_moves"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		return false, err
	}
	for _, m := range status.Moves {
		if m.Org == moveOrg {
			return m.Cell == st.Cell && m.Phase == st.Phase, nil
		}
	}
	return st.Phase == phaseForget, nil
}
