package main

import (
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/bench"
)

// TestJudgeMove: the move's steps make windows (on its way, frozen, living in a cell), and each
// of the moving organization's job requests is judged by the window it was sent in.
func TestJudgeMove(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	steps := []moveStep{
		{N: 1, Cell: moveAway, Phase: phaseFreeze, Asked: at(10), Done: at(10.1), Seen: at(10.3), Tries: 1},
		{N: 2, Cell: moveAway, Phase: phaseSwitched, Asked: at(20), Done: at(20.1), Seen: at(20.2), Tries: 1},
		{N: 3, Cell: moveHome, Phase: phaseFreeze, Asked: at(30), Done: at(30.1), Seen: at(31.9), Tries: 1},
		{N: 4, Cell: moveHome, Phase: phaseSwitched, Asked: at(40), Done: at(42), Seen: at(42.5), Tries: 3},
		{N: 5, Phase: phaseForget, Asked: at(50), Done: at(50.1), Seen: at(50.2), Tries: 1},
	}
	faults := []fault{{N: 1, Kind: faultEdge, Target: "edge3", Start: at(24), End: at(25)}}
	orgOf := map[int]uint64{1: moveOrg, 2: stayOrg}
	poll := func(req string, runner int, start float64, status int, source string) attempt {
		return attempt{Kind: kindPoll, Req: req, RunnerID: runner, Org: orgOf[runner], Edge: 1, Start: at(start), End: at(start + 0.5), Status: status, Source: source, OK: true}
	}
	attempts := []attempt{
		poll("home-before", 1, 5, 204, sourceCell),           // cell 2: placed
		poll("held", 1, 12, 204, sourceEdge),                 // held back while frozen
		poll("held-late", 1, 21, 204, sourceEdge),            // within 1 s of the switch followed: allowed
		poll("frozen-at-cell", 1, 15, 204, sourceCell),       // reached cell 2 while frozen
		poll("on-its-way", 1, 10.2, 204, sourceCell),         // the freeze not followed yet: not judged
		poll("away", 1, 22, 201, sourceCell),                 // cell 3: placed
		poll("misplaced-in-fault", 1, 24.5, 204, sourceCell), // cell 2 inside edge3's window
		poll("misplaced", 1, 27, 204, sourceCell),            // cell 2, outside any window
		poll("stray", 2, 27, 204, sourceEdge),                // another organization held back
		poll("stray-late", 1, 45, 204, sourceEdge),           // held back after the switch back
		poll("home-after", 1, 55, 204, sourceCell),           // forgotten: c:2 again, placed
	}
	ledgers := map[uint64]*bench.Ledger{2: bench.NewLedger(), 3: bench.NewLedger()}
	for cell, reqs := range map[uint64][]string{2: {"home-before", "frozen-at-cell", "on-its-way", "misplaced-in-fault", "misplaced", "home-after"}, 3: {"away", "switching"}} {
		for _, req := range reqs {
			ledgers[cell].Add(bench.LedgerEntry{Ev: bench.LedgerSeen, Cell: cell, Req: req, Route: "jobs/request"})
		}
	}
	receipts := map[uint64][]*receipt{3000001: {{ID: 3000001, Runner: 1, Org: moveOrg, Cell: 3}}, 3000002: {{ID: 3000002, Runner: 2, Org: stayOrg, Cell: 3}}}
	r := judgeMove(evidence{attempts: attempts, faults: faults, grace: time.Second, ledgers: ledgers, receipts: receipts, t0: t0}, steps)
	if r.HeldBack != 2 || len(r.StrayHeldBack) != 2 || !strings.Contains(r.StrayHeldBack[0], "runner 2") {
		t.Errorf("held back %d, stray %q; want 2 and the other organization's and the late one", r.HeldBack, r.StrayHeldBack)
	}
	if len(r.FrozenAtCell) != 1 || !strings.Contains(r.FrozenAtCell[0], "frozen-at-cell") {
		t.Errorf("reached a cell while frozen: %q, want frozen-at-cell alone", r.FrozenAtCell)
	}
	if r.Placed != 3 || r.MisplacedInFault != 1 || len(r.Misplaced) != 1 || !strings.Contains(r.Misplaced[0], "misplaced ") {
		t.Errorf("placed %d, misplaced in a fault %d, outside %q; want 3, 1 and misplaced", r.Placed, r.MisplacedInFault, r.Misplaced)
	}
	if r.AwayJobs != 1 {
		t.Errorf("away jobs %d, want 1 (runner 1's; runner 2 is of another organization)", r.AwayJobs)
	}
	checks := r.checks(len(steps))
	for i, want := range []bool{false, false, false} {
		if checks[i].OK != want {
			t.Errorf("check %q ok = %v, want %v (%s)", checks[i].Name, checks[i].OK, want, checks[i].Detail)
		}
	}
	if !strings.Contains(checks[0].Detail, "step 3 1800 ms") || strings.Contains(checks[0].Detail, "step 4") {
		t.Errorf("followed check detail %q, want step 3 named as slow and step 4 not", checks[0].Detail)
	}

	// A clean move passes every check.
	clean := judgeMove(evidence{attempts: []attempt{poll("held", 1, 12, 204, sourceEdge), poll("away", 1, 22, 201, sourceCell)},
		ledgers: ledgers, receipts: receipts, t0: t0}, steps[:2])
	for _, c := range clean.checks(2) {
		if !c.OK {
			t.Errorf("clean move: check %q failed: %s", c.Name, c.Detail)
		}
	}
}
