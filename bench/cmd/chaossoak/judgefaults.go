package main

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// judgeCut judges claim c of job j, whose answer the cell cut: the runner's job request must have
// failed as a cut answer does (a 502 edge made, or the connection closed: no answer), the runner
// must have polled again, and no runner may have the job. A cut answer to a poll its runner had
// reset (runner-reset-parked) had nobody to fail.
func judgeCut(ev evidence, byReq map[string]*attempt, j *bench.LedgerJob, c bench.LedgerClaim) cutJob {
	cj := cutJob{ID: j.ID, Cell: j.Cell, Req: c.Req, AtS: round1(c.At.Sub(ev.t0).Seconds())}
	for i := range ev.faults {
		f := &ev.faults[i]
		end := cmp.Or(f.Killed, f.End)
		if f.Kind == faultCellCut && f.Target == fmt.Sprintf("cell%d", j.Cell) && !c.At.Before(f.Start.Add(-time.Second)) &&
			(end.IsZero() || !c.At.After(end.Add(time.Second))) {
			cj.Fault = faultName(f)
		}
	}
	cj.Received = len(ev.receipts[j.ID]) > 0
	a := byReq[c.Req]
	if a == nil {
		cj.RunnerSaw = "no job request of the soak has this id"
		return cj
	}
	cj.Runner = a.RunnerID
	what, _ := describe(*a)
	if a.OK {
		what = fmt.Sprintf("%d from the %s", a.Status, a.Source)
	}
	cj.RunnerSaw = fmt.Sprintf("%s via edge%d", what, a.Edge)
	failedAsCut := !a.OK && (a.Source == sourceNone || a.Source == sourceEdge && a.Status == http.StatusBadGateway)
	if a.Kind == kindResetPoll {
		cj.RunnerSaw = fmt.Sprintf("nothing: its runner had reset the poll (via edge%d)", a.Edge)
		failedAsCut, cj.PolledAgain = true, true
	}
	for i := range ev.attempts {
		b := &ev.attempts[i]
		if !cj.PolledAgain && b.Kind == kindPoll && b.RunnerID == a.RunnerID && b.Start.After(a.End) {
			cj.PolledAgain = true
		}
	}
	cj.OK = failedAsCut && cj.PolledAgain && !cj.Received
	return cj
}

// judgeOntoReset places claim c of job j, made on a poll its runner reset, in time against the reset.
func judgeOntoReset(ev evidence, j *bench.LedgerJob, c bench.LedgerClaim, rp resetPoll) resetJob {
	rj := resetJob{ID: j.ID, Cell: j.Cell, Req: c.Req, Edge: rp.Edge, WithByte: rp.WithByte,
		AfterResetMS: c.At.Sub(rp.Reset).Milliseconds()}
	rj.Late = !rp.WithByte && c.At.Sub(rp.Reset) > lateClaim
	for _, f := range ev.faults {
		if f.N == rp.Fault {
			rj.Fault = faultName(&f)
		}
	}
	return rj
}

// judgeExits counts the edge processes and how each ended.
func judgeExits(procs []procExit, t0 time.Time) exitsReport {
	var r exitsReport
	for _, p := range procs {
		if p.Edge {
			r.EdgeProcesses++
		}
		switch {
		case !p.Exited:
		case p.Ended == endKill:
			if p.Edge {
				r.EdgeKilled++
			}
		case p.Ended != "":
			r.Asked = append(r.Asked, fmt.Sprintf("%s at t=%.1fs: %s (%s)", p.Name, p.ExitedAt.Sub(t0).Seconds(), p.Ended, p.Err))
		case p.Edge:
			r.EdgeOther = append(r.EdgeOther, fmt.Sprintf("%s at t=%.1fs (%s), %.1fs after its start", p.Name, p.ExitedAt.Sub(t0).Seconds(), p.Err, p.ExitedAt.Sub(p.Started).Seconds()))
		}
	}
	return r
}

// resetsReport counts the job requests reset while parked.
type resetsReport struct {
	Polls       int `json:"polls"`
	WithByte    int `json:"with_byte"`    // a byte of a next request sent before the reset
	AnswerBegun int `json:"answer_begun"` // an answer had begun to arrive when the runner reset
}

func countResets(resets []resetPoll) resetsReport {
	var r resetsReport
	for _, rp := range resets {
		r.Polls++
		if rp.WithByte {
			r.WithByte++
		}
		if rp.AnswerBegun {
			r.AnswerBegun++
		}
	}
	return r
}

// kindReport is one kind of fault and what came of it.
type kindReport struct {
	Kind    string `json:"kind"`
	Faults  int    `json:"faults"`
	Outcome string `json:"outcome"`
}

// faultOutcomes is what came of each fault (by number) and of each kind, from the faults' own
// notes and the verdict's cut jobs and jobs handed out onto reset polls.
func faultOutcomes(faults []fault, v verdict) (byFault map[int]string, kinds []kindReport) {
	byFault = map[int]string{}
	cutsOf := map[string][]cutJob{}
	for _, cj := range v.Jobs.CutAtCell {
		cutsOf[cj.Fault] = append(cutsOf[cj.Fault], cj)
	}
	ontoOf := map[string][]resetJob{}
	for _, rj := range v.Jobs.OntoReset {
		ontoOf[rj.Fault] = append(ontoOf[rj.Fault], rj)
	}
	count := map[string]int{}
	back := map[string][]float64{}
	sawCut := map[string]int{}
	var cutsBad, cutsNone, onto, late int
	for i := range faults {
		f := &faults[i]
		count[f.Kind]++
		if !f.End.IsZero() {
			back[f.Kind] = append(back[f.Kind], f.End.Sub(f.Start).Seconds())
		}
		var parts []string
		if f.Note != "" {
			parts = append(parts, f.Note)
		}
		switch f.Kind {
		case faultCellCut:
			cuts := cutsOf[faultName(f)]
			if len(cuts) == 0 {
				cutsNone++
				parts = append(parts, "no cut answer in the ledger")
			}
			for _, cj := range cuts {
				ok := "ok"
				if !cj.OK {
					ok = "NOT OK"
					cutsBad++
				}
				again := "polled again"
				if !cj.PolledAgain {
					again = "did not poll again"
				}
				parts = append(parts, fmt.Sprintf("job %d cut; runner %d saw %s, %s (%s)", cj.ID, cj.Runner, cj.RunnerSaw, again, ok))
				saw, _, _ := strings.Cut(cj.RunnerSaw, " via ")
				sawCut[saw]++
			}
		case faultRunnerReset:
			rjs := ontoOf[faultName(f)]
			parts = append(parts, fmt.Sprintf("jobs handed out onto them: %d", len(rjs)))
			for _, rj := range rjs {
				onto++
				if rj.Late {
					late++
				}
				byte := ""
				if rj.WithByte {
					byte = " (after a byte)"
				}
				parts = append(parts, fmt.Sprintf("job %d %+d ms after the reset%s", rj.ID, rj.AfterResetMS, byte))
			}
		}
		byFault[f.N] = strings.Join(parts, "; ")
	}
	for _, k := range slices.Sorted(maps.Keys(count)) {
		kr := kindReport{Kind: k, Faults: count[k]}
		switch k {
		case faultCellCut:
			kr.Outcome = fmt.Sprintf("answers cut: %d (faults that cut none: %d); their runners saw %s; not as a cut answer must end (a 502 or a closed connection, a new poll, no runner with the job): %d",
				len(v.Jobs.CutAtCell), cutsNone, countList(sawCut), cutsBad)
		case faultRunnerReset:
			kr.Outcome = fmt.Sprintf("%d parked polls reset (%d after a byte of a next request, %d with an answer arriving); jobs handed out onto them: %d, of them more than %s after a reset without a byte: %d",
				v.Resets.Polls, v.Resets.WithByte, v.Resets.AnswerBegun, onto, lateClaim, late)
		default:
			kr.Outcome = "kill -9 and start again"
		}
		if bs := back[k]; len(bs) > 0 {
			over := fmt.Sprintf("%.1f to %.1f s", slices.Min(bs), slices.Max(bs))
			if len(bs) == 1 {
				over = fmt.Sprintf("%.1f s", bs[0])
			}
			kr.Outcome += "; over (back) " + over + " after it began"
		}
		kinds = append(kinds, kr)
	}
	return byFault, kinds
}
