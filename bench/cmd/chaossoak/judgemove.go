package main

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// moveReport is what came of the organization's move: each step, and where its runners' job
// requests went.
type moveReport struct {
	Org   uint64           `json:"org"`
	Steps []moveStepReport `json:"steps"`
	// HeldBack: the moving organization's job requests edge answered 204 with Retry-After.
	HeldBack int `json:"held_back"`
	// StrayHeldBack: such answers outside a freeze (from its call to a second after its switch
	// was followed) or to another organization's runner.
	StrayHeldBack []string `json:"stray_held_back"`
	// FrozenAtCell: the moving organization's job requests sent once every edge had followed a
	// freeze, before its switch, that reached a cell.
	FrozenAtCell []string `json:"frozen_reached_a_cell"`
	// Placed counts, by where the organization lived when they were sent (the edges had followed
	// the last step), its job requests that reached the cell it lived in.
	Placed int `json:"placed"`
	// Misplaced: those that reached another cell; outside a fault window they fail the run.
	Misplaced        []string `json:"misplaced"`
	MisplacedInFault int      `json:"misplaced_in_fault"`
	// AwayJobs: jobs of the cell it moved to that its runners got.
	AwayJobs int `json:"away_jobs"`
}

type moveStepReport struct {
	moveStep
	AtS        float64 `json:"at_s"`
	TakenS     float64 `json:"taken_s"`     // from the first call to an edge taking it (-1: never)
	FollowedMS float64 `json:"followed_ms"` // from taken to every edge up listing it (-1: not within 10 s)
	Fault      string  `json:"fault,omitempty"`
}

// livesAt is where the organization lives for a job request sent at t, as the steps say: 0
// while a step is on its way (asked, not yet followed by every edge) or frozen.
func livesAt(steps []moveStep, t time.Time) uint64 {
	cell := uint64(moveHome)
	for _, st := range steps {
		if t.Before(st.Asked) {
			break
		}
		if st.Seen.IsZero() || t.Before(st.Seen) || st.Phase == phaseFreeze {
			cell = 0
			continue
		}
		cell = st.Cell
		if st.Phase == phaseForget {
			cell = moveHome // its tokens' c:2 again
		}
	}
	return cell
}

// frozenAt says whether a job request sent at t went out while every edge had followed a freeze
// and its switch had not been asked for yet (an edge may take it before it answers).
func frozenAt(steps []moveStep, t time.Time) bool {
	for i, st := range steps {
		if st.Phase != phaseFreeze || st.Seen.IsZero() || t.Before(st.Seen) {
			continue
		}
		if i+1 >= len(steps) || t.Before(steps[i+1].Asked) {
			return true
		}
	}
	return false
}

// mayHoldBack says whether edge may answer a job request of the moving organization sent at t
// with 204 and Retry-After: from a freeze's first call to a second after its switch was followed.
func mayHoldBack(steps []moveStep, t time.Time) bool {
	for i, st := range steps {
		if st.Phase != phaseFreeze || t.Before(st.Asked) {
			continue
		}
		if i+1 >= len(steps) || steps[i+1].Seen.IsZero() || t.Before(steps[i+1].Seen.Add(moveFollowed)) {
			return true
		}
	}
	return false
}

func judgeMove(ev evidence, steps []moveStep) moveReport {
	r := moveReport{Org: moveOrg}
	for _, st := range steps {
		sr := moveStepReport{moveStep: st, AtS: round1(st.Asked.Sub(ev.t0).Seconds()), TakenS: -1, FollowedMS: -1}
		if !st.Done.IsZero() {
			sr.TakenS = round1(st.Done.Sub(st.Asked).Seconds())
			if !st.Seen.IsZero() {
				sr.FollowedMS = float64(st.Seen.Sub(st.Done).Milliseconds())
			}
		}
		if f := window(ev.faults, ev.grace, st.Asked, st.Seen); f != nil && !st.Seen.IsZero() {
			sr.Fault = faultName(f)
		}
		r.Steps = append(r.Steps, sr)
	}
	reachedCell := func(req string) uint64 {
		for _, id := range slices.Sorted(maps.Keys(ev.ledgers)) {
			if ev.ledgers[id].Seen[req] > 0 {
				return id
			}
		}
		return 0
	}
	for _, a := range ev.attempts {
		if a.Kind != kindPoll {
			continue
		}
		org := a.Org
		line := func() string {
			return fmt.Sprintf("t=%.1fs runner %d (organization %d) %s via edge%d", a.Start.Sub(ev.t0).Seconds(), a.RunnerID, org, a.Req, a.Edge)
		}
		if a.Source == sourceEdge && a.Status == http.StatusNoContent {
			if org == moveOrg && mayHoldBack(steps, a.Start) {
				r.HeldBack++
			} else {
				r.StrayHeldBack = append(r.StrayHeldBack, line())
			}
			continue
		}
		if org != moveOrg {
			continue
		}
		cell := reachedCell(a.Req)
		if cell == 0 {
			continue
		}
		if frozenAt(steps, a.Start) {
			r.FrozenAtCell = append(r.FrozenAtCell, fmt.Sprintf("%s reached cell %d", line(), cell))
			continue
		}
		want := livesAt(steps, a.Start)
		switch {
		case want == 0:
		case cell == want:
			r.Placed++
		case window(ev.faults, ev.grace, a.Start, a.End) != nil:
			r.MisplacedInFault++
		default:
			r.Misplaced = append(r.Misplaced, fmt.Sprintf("%s reached cell %d, the organization lived in cell %d", line(), cell, want))
		}
	}
	for _, rcs := range ev.receipts {
		for _, rc := range rcs {
			if rc.Cell == moveAway && rc.Org == moveOrg {
				r.AwayJobs++
			}
		}
	}
	return r
}

// moveChecks are the run's checks on the move.
func (r moveReport) checks(steps int) []check {
	var taken, followed int
	var slow []string
	for _, st := range r.Steps {
		if st.TakenS >= 0 {
			taken++
		}
		switch {
		case st.FollowedMS < 0:
		case st.FollowedMS <= float64(moveFollowed.Milliseconds()):
			followed++
		case st.Fault != "":
			followed++
			slow = append(slow, fmt.Sprintf("step %d %.0f ms in fault %s", st.N, st.FollowedMS, st.Fault))
		default:
			slow = append(slow, fmt.Sprintf("step %d %.0f ms", st.N, st.FollowedMS))
		}
	}
	return []check{
		{Name: "the move: every step taken and followed by every edge within 1 s (or inside a fault window)",
			OK:     taken == steps && followed == steps,
			Detail: fmt.Sprintf("%d steps planned, %d taken, %d followed in time; slower: %s", steps, taken, followed, orNone(slow))},
		{Name: "frozen: the moving organization's job requests were held back by edge, none reached a cell",
			OK:     len(r.FrozenAtCell) == 0 && len(r.StrayHeldBack) == 0 && r.HeldBack > 0,
			Detail: fmt.Sprintf("%d held back; reached a cell while frozen: %s; held back outside a freeze or of another organization: %s", r.HeldBack, orNone(r.FrozenAtCell), orNone(r.StrayHeldBack))},
		{Name: "switched: the moving organization's job requests went to the cell it lived in",
			OK:     len(r.Misplaced) == 0 && r.Placed > 0 && r.AwayJobs > 0,
			Detail: fmt.Sprintf("%d to the right cell, %d jobs of cell %d taken by its runners; elsewhere inside a fault window: %d; elsewhere outside: %s", r.Placed, r.AwayJobs, moveAway, r.MisplacedInFault, orNone(r.Misplaced))},
	}
}
