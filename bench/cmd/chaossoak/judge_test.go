package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/bench"
)

func TestJudge(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []fault{{N: 1, Kind: faultEdge, Target: "edge2", Start: at(10), End: at(12), Recovered: at(13)}}
	attempts := []attempt{
		{Kind: kindPoll, Req: "r1", Edge: 1, Start: at(1), End: at(2), Status: 201, Source: sourceCell, OK: true},
		// in flight when edge2 was killed: no answer, inside the window
		{Kind: kindPoll, Req: "r2", Edge: 2, Start: at(5), End: at(10.5), Source: sourceNone, Cause: "EOF"},
		// an edge-made 502 well after the window and its grace
		{Kind: kindPoll, Req: "r3", Edge: 1, Start: at(30), End: at(31), Status: 502, Source: sourceEdge, Cause: "upstream_closed"},
		// a 204 for a request the cell answered 201
		{Kind: kindPoll, Req: "r4", Edge: 3, Start: at(32), End: at(33), Status: 204, Source: sourceCell, OK: true},
		// within the grace after the window
		{Kind: kindWorkspace, Req: "w1", Edge: 1, Start: at(15), End: at(16), Status: 504, Source: sourceEdge, Cause: "agent_not_connected"},
		{Kind: kindFinish, Req: "p1", Edge: 1, Start: at(3), End: at(3.1), Status: 200, Source: sourceCell, OK: true},
		// Go's transport sent this GET again on a new connection
		{Kind: kindWorkspace, Method: "GET", Req: "w2", Edge: 1, Start: at(3), End: at(3.1), Status: 200, Source: sourceUpstream, OK: true, Conns: 2},
		// edge sent this GET twice, in the fault window; and this POST twice
		{Kind: kindWorkspace, Method: "GET", Req: "w3", Edge: 3, Start: at(11), End: at(13), Status: 200, Source: sourceUpstream, OK: true, Conns: 1},
		{Kind: kindWorkspace, Method: "POST", Req: "w4", Edge: 3, Start: at(11), End: at(13), Status: 200, Source: sourceUpstream, OK: true, Conns: 1},
	}
	l := bench.NewLedger()
	for _, e := range []bench.LedgerEntry{
		{T: at(0).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000001, Token: "t1"},
		{T: at(1.5).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000001, Req: "r1"},
		{T: at(3).UnixMilli(), Ev: bench.LedgerUpdated, Cell: 2, ID: 2000001, State: "success"},
		{T: at(4).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000002, Token: "t2"},
		{T: at(10.2).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000002, Req: "r2"},
		{T: at(29).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000003, Token: "t3"},
		{T: at(30.5).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000003, Req: "r3"},
		{T: at(31).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000004, Token: "t4"},
		{T: at(32.5).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000004, Req: "r4"},
		{T: at(40).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000005, Token: "t5"},
		{T: at(40).UnixMilli(), Ev: bench.LedgerSeen, Cell: 2, Req: "p1", Route: "jobs/:id"},
		{T: at(40).UnixMilli(), Ev: bench.LedgerSeen, Cell: 2, Req: "p1", Route: "jobs/:id"},
	} {
		l.Add(e)
	}
	queued := map[uint64]time.Time{}
	for _, id := range []uint64{2000001, 2000002, 2000003, 2000004, 2000005, 2000009} {
		queued[id] = t0
	}
	v := judge(evidence{attempts: attempts, faults: faults, grace: 5 * time.Second, t0: t0,
		ledgers:  map[uint64]*bench.Ledger{2: l},
		receipts: map[uint64][]*receipt{2000001: {{ID: 2000001, Req: "r1", Finished: true}}},
		queued:   queued, upstreamDups: map[string]map[string][]time.Time{"a1": {"w9": {at(50), at(51)}, "w2": {at(3), at(3.05)},
			"w3": {at(11), at(12.5)}, "w4": {at(11), at(12.5)}}}})
	j := v.Jobs
	if j.Claimed != 4 || j.Received != 1 || j.Finished != 1 || j.InLedgers != 5 || j.QueuedBySoak != 6 {
		t.Errorf("counts: %+v", j)
	}
	if len(j.LostInFault) != 1 || j.LostInFault[0].ID != 2000002 || j.LostInFault[0].Fault != "#1 edge edge2" {
		t.Errorf("lost in a fault: %+v", j.LostInFault)
	}
	if len(j.LostOutside) != 2 || j.LostOutside[0].ID != 2000003 || j.LostOutside[1].ID != 2000004 ||
		j.LostOutside[1].Outcome != "204 from the cell via edge3" {
		t.Errorf("lost outside: %+v", j.LostOutside)
	}
	if !slices.Equal(j.StillQueued, []uint64{2000005}) || !slices.Equal(j.NotInLedger, []uint64{2000009}) {
		t.Errorf("still queued %v, not in ledger %v", j.StillQueued, j.NotInLedger)
	}
	if len(j.ClaimedTwice)+len(j.ReceivedTwice)+len(j.ReceivedNotClaimed)+len(j.WrongRequest)+len(j.Unfinished) != 0 {
		t.Errorf("unexpected: %+v", j)
	}
	want5xx := []failureCount{
		{What: "jobs/request: 502 upstream_closed", Outside: 1},
		{What: "workspace: 504 agent_not_connected", Inside: 1, Faults: []string{faultEdge}},
	}
	if len(v.Edge5xx) != 2 || v.Edge5xx[0].What != want5xx[0].What || v.Edge5xx[0].Outside != 1 ||
		v.Edge5xx[1].What != want5xx[1].What || v.Edge5xx[1].Inside != 1 || !slices.Equal(v.Edge5xx[1].Faults, want5xx[1].Faults) {
		t.Errorf("edge 5xx: %+v", v.Edge5xx)
	}
	if len(v.OtherFailures) != 1 || v.OtherFailures[0].What != "jobs/request: no answer: EOF" || v.OtherFailures[0].Inside != 1 {
		t.Errorf("other failures: %+v", v.OtherFailures)
	}
	if len(v.CellDups) != 1 || v.CellDups[0].Req != "p1" || v.CellDups[0].Where != "cell 2" || len(v.CellDups[0].Arrivals) != 2 ||
		len(v.UpstreamDups) != 2 || v.UpstreamDups[0].Req != "w4" || v.UpstreamDups[1].Req != "w9" || v.UpstreamDups[1].Sent != "not sent by the soak" ||
		len(v.ClientResent) != 1 || v.ClientResent[0].Req != "w2" || len(v.ResentIdempotent) != 1 || v.ResentIdempotent[0].Fault != "#1 edge edge2" {
		t.Errorf("duplicates: cells %+v upstreams %+v client %+v idempotent %+v", v.CellDups, v.UpstreamDups, v.ClientResent, v.ResentIdempotent)
	}
	if len(v.OutsideSamples) != 1 {
		t.Errorf("outside samples: %v", v.OutsideSamples)
	}
}

func TestJudgeDoubleHandOut(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	l := bench.NewLedger()
	l.Add(bench.LedgerEntry{T: t0.UnixMilli(), Ev: bench.LedgerClaimed, Cell: 3, ID: 3000001, Token: "t", Req: "a"})
	l.Add(bench.LedgerEntry{T: t0.UnixMilli(), Ev: bench.LedgerClaimed, Cell: 3, ID: 3000001, Req: "b"})
	l.Add(bench.LedgerEntry{T: t0.UnixMilli(), Ev: bench.LedgerUpdated, Cell: 3, ID: 3000001, State: "success"})
	attempts := []attempt{
		{Kind: kindPoll, Req: "a", Start: t0, End: t0, Status: 201, Source: sourceCell, OK: true},
		{Kind: kindPoll, Req: "b", Start: t0, End: t0, Status: 201, Source: sourceCell, OK: true},
		{Kind: kindPoll, Req: "c", Start: t0, End: t0, Status: 201, Source: sourceCell, OK: true},
	}
	v := judge(evidence{attempts: attempts, t0: t0, ledgers: map[uint64]*bench.Ledger{3: l},
		receipts: map[uint64][]*receipt{
			3000001: {{ID: 3000001, Req: "a", Finished: true}, {ID: 3000001, Req: "b", Finished: true}},
			3000002: {{ID: 3000002, Req: "c", Finished: true}},
		}})
	j := v.Jobs
	if !slices.Equal(j.ClaimedTwice, []uint64{3000001}) || !slices.Equal(j.ReceivedTwice, []uint64{3000001}) ||
		!slices.Equal(j.ReceivedNotClaimed, []uint64{3000002}) {
		t.Errorf("got %+v", j)
	}
}

func TestWindowPrefersTheFaultTheAttemptEndedIn(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []fault{
		{N: 1, Start: at(10), End: at(12)},
		{N: 2, Start: at(17), End: at(18)},
		{N: 3, Start: at(40)}, // never back
	}
	for _, c := range []struct {
		start, end float64
		want       int
	}{
		{5, 8, 0}, {9, 11, 1}, {15, 16.9, 1}, {15, 17.5, 2}, {16, 30, 2}, {30, 35, 0}, {38, 100, 3},
	} {
		got := 0
		if f := window(faults, 5*time.Second, at(c.start), at(c.end)); f != nil {
			got = f.N
		}
		if got != c.want {
			t.Errorf("attempt %.1f-%.1f s: fault %d, want %d", c.start, c.end, got, c.want)
		}
	}
}

// A cut answer is lost at the cell, not by edge: apart from the lost claims, OK when its runner
// saw a 502 or a closed connection, polled again and nobody got the job. A job handed out onto
// a reset poll is listed with its delay after the reset; late only without a byte first.
func TestJudgeCutAndReset(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []fault{
		{N: 1, Kind: faultCellCut, Target: "cell2", Start: at(10), Killed: at(10.5), End: at(12), Recovered: at(12)},
		{N: 2, Kind: faultRunnerReset, Target: "5 parked polls", Start: at(20), Killed: at(21), End: at(21), Recovered: at(21)},
		{N: 3, Kind: faultCellCut, Target: "cell3", Start: at(30), Killed: at(30.5), End: at(32), Recovered: at(32)},
	}
	attempts := []attempt{
		// cut: edge made a 502, the runner polled again
		{Kind: kindPoll, Req: "c1", Edge: 1, RunnerID: 4, Start: at(9), End: at(10.4), Status: 502, Source: sourceEdge, Cause: "answer_cut"},
		{Kind: kindPoll, Req: "c1b", Edge: 2, RunnerID: 4, Start: at(11.4), End: at(11.5), Status: 204, Source: sourceCell, OK: true},
		// cut: the runner got half a body, and never polled again
		{Kind: kindPoll, Req: "c2", Edge: 3, RunnerID: 7, Start: at(29), End: at(30.3), Source: sourceNone, Cause: "body: EOF"},
		// reset polls
		{Kind: kindResetPoll, Req: "r1", Edge: 1, RunnerID: 2001, Start: at(20), End: at(20.3), Source: sourceReset, OK: true},
		{Kind: kindResetPoll, Req: "r2", Edge: 2, RunnerID: 2002, Start: at(20), End: at(20.3), Source: sourceReset, OK: true},
		{Kind: kindResetPoll, Req: "r3", Edge: 3, RunnerID: 2003, Start: at(20), End: at(20.3), Source: sourceReset, OK: true},
	}
	resets := []resetPoll{
		{Req: "r1", Fault: 2, Runner: 2001, Edge: 1, Cell: 2, WithByte: true, Reset: at(20.3)},
		{Req: "r2", Fault: 2, Runner: 2002, Edge: 2, Cell: 2, Reset: at(20.3)},
		{Req: "r3", Fault: 2, Runner: 2003, Edge: 3, Cell: 2, Reset: at(20.3), AnswerBegun: true},
	}
	l2, l3 := bench.NewLedger(), bench.NewLedger()
	for _, e := range []bench.LedgerEntry{
		{T: at(1).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000001, Token: "t"},
		{T: at(10.3).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000001, Req: "c1"},
		{T: at(10.3).UnixMilli(), Ev: bench.LedgerCut, Cell: 2, ID: 2000001, Req: "c1"},
		{T: at(1).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000002, Token: "t"},
		{T: at(25).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000002, Req: "r1"}, // after a byte: edge cannot tell
		{T: at(1).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000003, Token: "t"},
		{T: at(22).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000003, Req: "r2"}, // no byte, 1.7 s later: late
		{T: at(1).UnixMilli(), Ev: bench.LedgerQueued, Cell: 2, ID: 2000004, Token: "t"},
		{T: at(20.25).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 2, ID: 2000004, Req: "r3"}, // as the runner reset
	} {
		l2.Add(e)
	}
	for _, e := range []bench.LedgerEntry{
		{T: at(1).UnixMilli(), Ev: bench.LedgerQueued, Cell: 3, ID: 3000001, Token: "t"},
		{T: at(30.2).UnixMilli(), Ev: bench.LedgerClaimed, Cell: 3, ID: 3000001, Req: "c2"},
		{T: at(30.2).UnixMilli(), Ev: bench.LedgerCut, Cell: 3, ID: 3000001, Req: "c2"},
	} {
		l3.Add(e)
	}
	v := judge(evidence{attempts: attempts, faults: faults, grace: 5 * time.Second, t0: t0, resets: resets,
		ledgers: map[uint64]*bench.Ledger{2: l2, 3: l3}, receipts: map[uint64][]*receipt{
			3000001: {{ID: 3000001, Req: "c9", Runner: 9}}, // a runner got the cut job: must never be
		}})
	j := v.Jobs
	if len(j.LostInFault)+len(j.LostOutside) != 0 {
		t.Errorf("cut and reset claims counted as lost by edge: in %+v, outside %+v", j.LostInFault, j.LostOutside)
	}
	if len(j.CutAtCell) != 2 {
		t.Fatalf("cut at cell: %+v", j.CutAtCell)
	}
	c1, c2 := j.CutAtCell[0], j.CutAtCell[1]
	if !c1.OK || c1.Runner != 4 || !c1.PolledAgain || c1.Received || c1.Fault != "#1 cell-mid-answer cell2" ||
		c1.RunnerSaw != "502 answer_cut via edge1" {
		t.Errorf("cut job 2000001: %+v", c1)
	}
	if c2.OK || c2.PolledAgain || !c2.Received || c2.Fault != "#3 cell-mid-answer cell3" || c2.RunnerSaw != "no answer: body: EOF via edge3" {
		t.Errorf("cut job 3000001: %+v", c2)
	}
	if !slices.Equal(j.WrongRequest, []uint64{3000001}) {
		t.Errorf("the cut job received in the answer to another request: wrong request %v, want [3000001]", j.WrongRequest)
	}
	want := []resetJob{
		{ID: 2000002, Cell: 2, Req: "r1", Edge: 1, WithByte: true, AfterResetMS: 4700, Fault: "#2 runner-reset-parked 5 parked polls"},
		{ID: 2000003, Cell: 2, Req: "r2", Edge: 2, AfterResetMS: 1700, Late: true, Fault: "#2 runner-reset-parked 5 parked polls"},
		{ID: 2000004, Cell: 2, Req: "r3", Edge: 3, AfterResetMS: -50, Fault: "#2 runner-reset-parked 5 parked polls"},
	}
	if !slices.Equal(j.OntoReset, want) {
		t.Errorf("onto reset polls:\n got %+v\nwant %+v", j.OntoReset, want)
	}
	if v.Resets != (resetsReport{Polls: 3, WithByte: 1, AnswerBegun: 1}) {
		t.Errorf("resets: %+v", v.Resets)
	}
	for _, k := range v.Requests {
		if k.Kind == kindResetPoll && (k.Total != 3 || k.OK != 3) {
			t.Errorf("reset polls counted as %+v, want 3 OK", k)
		}
	}

	byFault, kinds := faultOutcomes(faults, v)
	if len(kinds) != 2 || kinds[0].Kind != faultCellCut || kinds[0].Faults != 2 || kinds[1].Kind != faultRunnerReset ||
		!strings.Contains(kinds[0].Outcome, "answers cut: 2 (faults that cut none: 0)") || !strings.Contains(kinds[0].Outcome, "no runner with the job): 1") ||
		!strings.Contains(kinds[1].Outcome, "3 parked polls reset (1 after a byte") || !strings.Contains(kinds[1].Outcome, "jobs handed out onto them: 3, of them more than 1s after a reset without a byte: 1") {
		t.Errorf("kinds: %+v", kinds)
	}
	if !strings.Contains(byFault[1], "job 2000001 cut; runner 4 saw 502 answer_cut via edge1, polled again (ok)") ||
		!strings.Contains(byFault[3], "(NOT OK)") || !strings.Contains(byFault[2], "job 2000003 +1700 ms after the reset") {
		t.Errorf("outcomes: %v", byFault)
	}
}

func TestJudgeExits(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	x := judgeExits([]procExit{
		{Name: "edge1", Edge: true, Ended: endKill, Exited: true, ExitedAt: at(10)},
		{Name: "edge1.2", Edge: true, Started: at(12), Exited: true, ExitedAt: at(40), Err: "exit status 2"}, // a crash
		{Name: "edge1.3", Edge: true},
		{Name: "edge2", Edge: true, Ended: endKill}, // asked, not yet exited when judged
		{Name: "cell2", Ended: endCut, Exited: true, ExitedAt: at(20), Err: "exit status 3"},
		{Name: "cell3", Exited: true, ExitedAt: at(30)}, // not an edge: the process check's
	}, t0)
	if x.EdgeProcesses != 4 || x.EdgeKilled != 1 || len(x.EdgeOther) != 1 || !strings.HasPrefix(x.EdgeOther[0], "edge1.2 at t=40.0s (exit status 2), 28.0s after its start") ||
		len(x.Asked) != 1 || !strings.HasPrefix(x.Asked[0], "cell2 at t=20.0s") {
		t.Errorf("exits: %+v", x)
	}
}
