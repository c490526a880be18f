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

// evidence is everything the verdict on jobs and requests is drawn from.
type evidence struct {
	attempts     []attempt
	faults       []fault
	grace        time.Duration
	ledgers      map[uint64]*bench.Ledger // by cell id
	receipts     map[uint64][]*receipt    // by job id
	queued       map[uint64]time.Time     // jobs the soak queued (the cell answered 200)
	queueRefused int
	upstreamDups map[string]map[string][]time.Time // agent -> request id -> arrivals, of ids seen twice
	resets       []resetPoll                       // job requests their runners reset while parked
	procs        []procExit                        // every process started and how it ended
	t0           time.Time                         // offsets in the report are from here
}

// procExit is one process of the cluster and how it ended, as the judge reads it.
type procExit struct {
	Name     string // edge1, edge1.2, cell3.4, ...
	Edge     bool
	Ended    string // how the fault script ended it (endKill, endCut); "" when it did not
	Started  time.Time
	Exited   bool
	ExitedAt time.Time
	Err      string // the exit status, once exited
}

// jobsReport is the job accounting.
type jobsReport struct {
	QueuedBySoak int `json:"queued_by_soak"` // the cells' control listener answered 200
	QueueRefused int `json:"queue_refused"`  // queue requests a cell did not answer (it was down): no job
	InLedgers    int `json:"in_ledgers"`     // jobs the cells' ledgers name
	Claimed      int `json:"claimed"`        // jobs a cell handed out (a 201 written)
	Received     int `json:"received"`       // jobs a runner got
	Finished     int `json:"finished"`       // received, and the cell says success

	ClaimedTwice       []uint64  `json:"claimed_twice"`        // a cell wrote two 201s for it
	ReceivedTwice      []uint64  `json:"received_twice"`       // runners got it twice
	ReceivedNotClaimed []uint64  `json:"received_not_claimed"` // a runner got it, no cell's ledger has the claim
	WrongRequest       []uint64  `json:"wrong_request"`        // a runner got it in the answer to another job request than the cell's
	Unfinished         []string  `json:"unfinished"`           // received and not finished, with why
	LostInFault        []lostJob `json:"lost_in_fault"`        // handed out, the answer lost in a fault window
	LostOutside        []lostJob `json:"lost_outside"`         // handed out, the answer lost outside any fault window
	StillQueued        []uint64  `json:"still_queued"`         // never handed out
	NotInLedger        []uint64  `json:"not_in_ledger"`        // queued by the soak, absent from its cell's ledger

	// CutAtCell: handed out in a 201 the cell cut mid-body before it exited (cell-mid-answer);
	// lost at the cell, not by edge: no runner may have it.
	CutAtCell []cutJob `json:"cut_at_cell"`
	// OntoReset: handed out in the answer to a job request its runner had reset (or reset as the
	// answer came): a job handed to nobody, as a cut one.
	OntoReset []resetJob `json:"handed_onto_reset_polls"`
}

// cutJob is a job whose 201 the cell cut mid-body.
type cutJob struct {
	ID     uint64  `json:"id"`
	Cell   uint64  `json:"cell"`
	Req    string  `json:"request"`
	AtS    float64 `json:"at_s"`
	Runner int     `json:"runner"`
	// RunnerSaw is what the job request ended with; OK when it failed as a cut answer must
	// (an edge-made 502 or the connection closed), the runner polled again, and no runner got
	// the job.
	RunnerSaw   string `json:"runner_saw"`
	PolledAgain bool   `json:"polled_again"`
	Received    bool   `json:"received"` // a runner got the job all the same: must never be
	OK          bool   `json:"ok"`
	Fault       string `json:"fault"`
}

// resetJob is a job handed out onto a reset poll.
type resetJob struct {
	ID       uint64 `json:"id"`
	Cell     uint64 `json:"cell"`
	Req      string `json:"request"`
	Edge     int    `json:"edge"`
	WithByte bool   `json:"with_byte"`
	// AfterResetMS is from the reset to the cell's claim: below 0, the cell handed it out as
	// the runner reset (the runner's doing); above lateClaim without a byte of a next request,
	// edge did not close the cell's request when the runner went away.
	AfterResetMS int64  `json:"after_reset_ms"`
	Late         bool   `json:"late"`
	Fault        string `json:"fault"`
}

// lateClaim bounds how long after a runner's reset (without a byte of a next request) edge may
// take to close the cell's request: a claim later than that is edge holding a dead poll.
const lateClaim = time.Second

// lostJob is a job a cell handed out whose 201 never reached a runner.
type lostJob struct {
	ID      uint64  `json:"id"`
	Cell    uint64  `json:"cell"`
	Req     string  `json:"request"`
	AtS     float64 `json:"at_s"`
	Outcome string  `json:"runner_saw"` // what the runner's job request ended with
	Fault   string  `json:"fault"`      // the fault window it falls in
}

// failureCount counts failed requests of one kind by where they fall.
type failureCount struct {
	What    string   `json:"what"`
	Inside  int      `json:"inside"`
	Outside int      `json:"outside"`
	Faults  []string `json:"faults,omitempty"` // the kinds of fault the inside ones fell in
}

// kindCount counts the requests of one kind.
type kindCount struct {
	Kind    string `json:"kind"`
	Total   int    `json:"total"`
	OK      int    `json:"ok"`
	Inside  int    `json:"failed_inside"`
	Outside int    `json:"failed_outside"`
}

// exitsReport is how the processes ended.
type exitsReport struct {
	EdgeProcesses int `json:"edge_processes"` // started, restarts included
	EdgeKilled    int `json:"edge_killed"`    // ended by the fault script's kill -9
	// EdgeOther are edge processes that exited otherwise (a crash): there must be none.
	EdgeOther []string `json:"edge_other_exits"`
	// Asked are processes the fault script had exit otherwise than by a kill -9 (a cell that cut
	// an answer).
	Asked []string `json:"asked_to_exit"`
}

// verdict is what judge finds.
type verdict struct {
	Exits          exitsReport    `json:"exits"`
	Resets         resetsReport   `json:"resets"`
	Jobs           jobsReport     `json:"jobs"`
	Requests       []kindCount    `json:"requests"`
	Edge5xx        []failureCount `json:"edge_5xx"`       // by status and cause
	OtherFailures  []failureCount `json:"other_failures"` // no answer, unexpected answers
	OutsideSamples []string       `json:"outside_samples"`
	CellDups       []duplicate    `json:"cell_duplicate_requests"`     // sent once by the soak, seen twice
	UpstreamDups   []duplicate    `json:"upstream_duplicate_requests"` // sent once by the soak, seen twice
	// ResentIdempotent are GETs (or HEADs) seen twice whose attempt fell in a fault window:
	// edge sent again an idempotent request the holder or agent died answering (RFC 9110 lets
	// an intermediary do so; README says edge re-sends only what never reached the upstream).
	ResentIdempotent []duplicate `json:"resent_idempotent"`
	ClientResent     []duplicate `json:"client_resent"` // seen twice, but Go's transport in the soak sent them twice
}

// duplicate is a request that reached a cell or an upstream more than once.
type duplicate struct {
	Req      string    `json:"request"`
	Where    string    `json:"where"`      // "cell 2", "upstream of a1"
	Arrivals []float64 `json:"arrivals_s"` // when it arrived, each time
	Sent     string    `json:"sent"`       // the soak's attempt: what, through which edge, when, how it ended
	Fault    string    `json:"fault,omitempty"`
}

// window is the fault window (the fault plus grace after its end) an attempt overlaps, nil when
// none: the one the attempt ended in when there is one (a long poll may overlap an earlier
// fault as well), else the latest that began before it ended.
func window(faults []fault, grace time.Duration, start, end time.Time) *fault {
	var best *fault
	for i := range faults {
		f := &faults[i]
		if f.Start.IsZero() {
			continue
		}
		wEnd := f.End.Add(grace)
		if f.End.IsZero() {
			wEnd = time.Unix(1<<40, 0) // never back: the rest of the run
		}
		if end.Before(f.Start) || start.After(wEnd) {
			continue
		}
		if !end.After(wEnd) {
			return f // the attempt ended inside this window
		}
		best = f
	}
	return best
}

func faultName(f *fault) string { return fmt.Sprintf("#%d %s %s", f.N, f.Kind, f.Target) }

// describe is a failed attempt's line in the tables: edge-made 5xx by status and cause, the rest
// by what was wrong.
func describe(a attempt) (what string, edge5xx bool) {
	switch {
	case a.Source == sourceEdge && a.Status >= 500:
		return fmt.Sprintf("%d %s", a.Status, cmp.Or(a.Cause, "?")), true
	case a.Source == sourceNone:
		return "no answer: " + a.Cause, false
	case a.Source == sourceEdge:
		return fmt.Sprintf("edge %d %s", a.Status, a.Cause), false
	case a.Cause != "":
		return fmt.Sprintf("%s %d %s", a.Source, a.Status, a.Cause), false
	}
	return fmt.Sprintf("%s %d", a.Source, a.Status), false
}

func judge(ev evidence) verdict {
	var v verdict
	byReq := map[string]*attempt{}
	kinds := map[string]*kindCount{}
	edge5xx := map[string]*failureCount{}
	other := map[string]*failureCount{}
	for i := range ev.attempts {
		a := &ev.attempts[i]
		byReq[a.Req] = a
		k := kinds[a.Kind]
		if k == nil {
			k = &kindCount{Kind: a.Kind}
			kinds[a.Kind] = k
		}
		k.Total++
		if a.OK {
			k.OK++
			continue
		}
		what, is5xx := describe(*a)
		table := other
		if is5xx {
			table = edge5xx
		}
		key := a.Kind + "\x00" + what
		fc := table[key]
		if fc == nil {
			fc = &failureCount{What: a.Kind + ": " + what}
			table[key] = fc
		}
		if f := window(ev.faults, ev.grace, a.Start, a.End); f != nil {
			fc.Inside++
			k.Inside++
			if !slices.Contains(fc.Faults, f.Kind) {
				fc.Faults = append(fc.Faults, f.Kind)
				slices.Sort(fc.Faults)
			}
		} else {
			fc.Outside++
			k.Outside++
			if len(v.OutsideSamples) < 30 {
				v.OutsideSamples = append(v.OutsideSamples, fmt.Sprintf("t=%.1fs edge%d %s %s: %s %s", a.Start.Sub(ev.t0).Seconds(), a.Edge, a.Kind, a.Req, what, a.Detail))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		v.Requests = append(v.Requests, *kinds[k])
	}
	v.Edge5xx = sortedCounts(edge5xx)
	v.OtherFailures = sortedCounts(other)
	v.Jobs = judgeJobs(ev, byReq)
	v.Exits = judgeExits(ev.procs, ev.t0)
	v.Resets = countResets(ev.resets)
	// A request id seen twice is edge sending a request twice, unless the client's own
	// transport took a second connection for it.
	// class: "client" (the soak's transport sent it twice), "idempotent" (a GET or HEAD in a
	// fault window), or "" (edge sent it twice).
	dup := func(id, where string, arrivals []time.Time) (d duplicate, class string) {
		d = duplicate{Req: id, Where: where}
		for _, at := range arrivals {
			d.Arrivals = append(d.Arrivals, round3(at.Sub(ev.t0).Seconds()))
		}
		a := byReq[id]
		if a == nil {
			d.Sent = "not sent by the soak"
			return d, ""
		}
		what, _ := describe(*a)
		if a.OK {
			what = fmt.Sprintf("%d from the %s", a.Status, a.Source)
		}
		d.Sent = fmt.Sprintf("%s %s via edge%d, t=%.3f-%.3fs, %s, %d connection(s)", a.Kind, a.Method, a.Edge,
			a.Start.Sub(ev.t0).Seconds(), a.End.Sub(ev.t0).Seconds(), what, a.Conns)
		f := window(ev.faults, ev.grace, a.Start, a.End)
		if f != nil {
			d.Fault = faultName(f)
		}
		switch {
		case a.Conns > 1:
			return d, "client"
		case f != nil && (a.Method == http.MethodGet || a.Method == http.MethodHead):
			return d, "idempotent"
		}
		return d, ""
	}
	file := func(d duplicate, class string, edgeMade *[]duplicate) {
		switch class {
		case "client":
			v.ClientResent = append(v.ClientResent, d)
		case "idempotent":
			v.ResentIdempotent = append(v.ResentIdempotent, d)
		default:
			*edgeMade = append(*edgeMade, d)
		}
	}
	for _, cellID := range slices.Sorted(maps.Keys(ev.ledgers)) {
		l := ev.ledgers[cellID]
		for _, id := range l.Duplicates() {
			d, class := dup(id, fmt.Sprintf("cell %d", cellID), l.SeenAt[id])
			file(d, class, &v.CellDups)
		}
	}
	for _, agent := range slices.Sorted(maps.Keys(ev.upstreamDups)) {
		ids := ev.upstreamDups[agent]
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			d, class := dup(id, "upstream of "+agent, ids[id])
			file(d, class, &v.UpstreamDups)
		}
	}
	return v
}

func sortedCounts(m map[string]*failureCount) []failureCount {
	out := make([]failureCount, 0, len(m))
	for _, fc := range m {
		out = append(out, *fc)
	}
	slices.SortFunc(out, func(a, b failureCount) int {
		return cmp.Or(cmp.Compare(b.Outside, a.Outside), cmp.Compare(b.Inside, a.Inside), strings.Compare(a.What, b.What))
	})
	return out
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
