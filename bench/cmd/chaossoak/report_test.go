package main

import (
	"strings"
	"testing"
)

// The report shows the new kinds of fault, the jobs cut at a cell and handed onto reset polls,
// and edge exits, in their own rows and sections.
func TestMarkdownNewFaults(t *testing.T) {
	r := result{Passed: false,
		Faults: []faultReport{
			{N: 1, Kind: faultCellCut, Target: "cell2", AtS: 10, BackS: 1.5, SeenS: 0.5, Outcome: "job 2000001 cut; runner 4 saw 502 answer_cut via edge1, polled again (ok)"},
			{N: 2, Kind: faultRunnerReset, Target: "5 parked polls", AtS: 20, BackS: 0.4, SeenS: 0, Outcome: "5 of 5 polls parked and reset; 0 jobs handed out onto them"},
		},
		FaultKinds: []kindReport{{Kind: faultCellCut, Faults: 1, Outcome: "1 answers cut"}, {Kind: faultRunnerReset, Faults: 1, Outcome: "5 parked polls reset"}},
		verdict: verdict{
			Exits:  exitsReport{EdgeProcesses: 4, EdgeKilled: 1, EdgeOther: []string{"edge1.2 at t=40.0s (exit status 2)"}, Asked: []string{"cell2 at t=10.5s: " + endCut}},
			Resets: resetsReport{Polls: 5, WithByte: 2},
			Jobs: jobsReport{
				CutAtCell: []cutJob{{ID: 2000001, Cell: 2, Req: "c1", AtS: 10.3, Runner: 4, RunnerSaw: "502 answer_cut via edge1", PolledAgain: true, OK: true, Fault: "#1 cell-mid-answer cell2"}},
				OntoReset: []resetJob{{ID: 2000003, Cell: 2, Req: "r2", Edge: 2, AfterResetMS: 1700, Late: true, Fault: "#2 runner-reset-parked 5 parked polls"}},
			},
		},
		Checks: []check{{Name: "zero edge exits other than the kill -9s", Detail: "4 edge processes, 1 ended by the script's kill -9, 1 exited otherwise"}},
	}
	md := r.markdown()
	for _, want := range []string{
		"| handed out in an answer the cell cut (cell-mid-answer) / onto a poll its runner reset (runner-reset-parked) | 1 / 1 |",
		"| edge processes / ended by kill -9 / exited otherwise | 4 / 1 / 1 |",
		"| cell-mid-answer | 1 | 1 answers cut |",
		"| 1 | cell-mid-answer | cell2 | 10.0 s | 1.5 s | 0.5 s | job 2000001 cut; runner 4 saw 502 answer_cut via edge1, polled again (ok) |  |",
		"### Jobs handed out in an answer the cell cut",
		"| 2000001 | 2 | 10.3 s | 4 | 502 answer_cut via edge1 | true | false | #1 cell-mid-answer cell2 |",
		"### Jobs handed out onto a poll its runner had reset",
		"| 2000003 | 2 | r2 | edge2 | false | 1700 ms **late** | #2 runner-reset-parked 5 parked polls |",
		"- **edge exited unasked**: edge1.2 at t=40.0s (exit status 2)",
		"| zero edge exits other than the kill -9s | **FAILED** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
