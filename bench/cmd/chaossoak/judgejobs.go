package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"gitlab.com/edge/edge/bench"
)

// judgeJobs sets the cells' ledgers against what the runners got.
func judgeJobs(ev evidence, byReq map[string]*attempt) jobsReport {
	r := jobsReport{QueuedBySoak: len(ev.queued), QueueRefused: ev.queueRefused}
	resetsByReq := map[string]resetPoll{}
	for _, rp := range ev.resets {
		resetsByReq[rp.Req] = rp
	}
	inLedger := map[uint64]*bench.LedgerJob{}
	for _, cellID := range slices.Sorted(maps.Keys(ev.ledgers)) {
		l := ev.ledgers[cellID]
		for _, id := range l.Order {
			j := l.Jobs[id]
			inLedger[id] = j
			r.InLedgers++
			if len(j.Claims) > 0 {
				r.Claimed++
			}
			if len(j.Claims) > 1 {
				r.ClaimedTwice = append(r.ClaimedTwice, id)
			}
			if len(j.Claims) == 0 && j.State == "pending" {
				r.StillQueued = append(r.StillQueued, id)
			}
			for _, c := range j.Claims {
				if c.Cut {
					r.CutAtCell = append(r.CutAtCell, judgeCut(ev, byReq, j, c))
					continue
				}
				if slices.ContainsFunc(ev.receipts[id], func(rc *receipt) bool { return rc.Req == c.Req }) {
					continue
				}
				if rp, ok := resetsByReq[c.Req]; ok {
					r.OntoReset = append(r.OntoReset, judgeOntoReset(ev, j, c, rp))
					continue
				}
				lost := lostJob{ID: id, Cell: j.Cell, Req: c.Req, AtS: round1(c.At.Sub(ev.t0).Seconds())}
				a := byReq[c.Req]
				if a == nil {
					lost.Outcome = "no job request of the soak has this id"
					r.LostOutside = append(r.LostOutside, lost)
					continue
				}
				what, _ := describe(*a)
				if a.OK {
					what = fmt.Sprintf("%d from the %s", a.Status, a.Source)
				}
				lost.Outcome = fmt.Sprintf("%s via edge%d", what, a.Edge)
				// Honest only when the runner saw the request fail, during a fault: an answer
				// lost any other way is edge losing it.
				if f := window(ev.faults, ev.grace, a.Start, a.End); f != nil && !a.OK {
					lost.Fault = faultName(f)
					r.LostInFault = append(r.LostInFault, lost)
				} else {
					r.LostOutside = append(r.LostOutside, lost)
				}
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ev.queued)) {
		if inLedger[id] == nil {
			r.NotInLedger = append(r.NotInLedger, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ev.receipts)) {
		rcs := ev.receipts[id]
		r.Received++
		if len(rcs) > 1 {
			r.ReceivedTwice = append(r.ReceivedTwice, id)
		}
		j := inLedger[id]
		if j == nil || len(j.Claims) == 0 {
			r.ReceivedNotClaimed = append(r.ReceivedNotClaimed, id)
		} else {
			for _, rc := range rcs {
				if !slices.ContainsFunc(j.Claims, func(c bench.LedgerClaim) bool { return c.Req == rc.Req }) {
					r.WrongRequest = append(r.WrongRequest, id)
				}
			}
		}
		finished := true
		for _, rc := range rcs {
			if !rc.Finished {
				finished = false
				r.Unfinished = append(r.Unfinished, fmt.Sprintf("job %d (runner %d): %s", id, rc.Runner, cmp.Or(rc.Abandoned, "still running")))
			}
		}
		if finished && j != nil && j.State != "success" {
			finished = false
			r.Unfinished = append(r.Unfinished, fmt.Sprintf("job %d: the runner got success, the cell's ledger says %q", id, j.State))
		}
		if finished {
			r.Finished++
		}
	}
	return r
}
