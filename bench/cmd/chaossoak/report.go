package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// result is chaos.json.
type result struct {
	StartedAt      string  `json:"started_at"`
	Edge           string  `json:"edge"` // edge version of the binary under test
	Seed           int64   `json:"seed"`
	Quick          bool    `json:"quick"`
	ChaosS         float64 `json:"chaos_s"`
	WarmupS        float64 `json:"warmup_s"`
	GraceS         float64 `json:"grace_s"`
	Runners        int     `json:"runners"`
	WorkspaceLoops int     `json:"workspace_loops"`
	JobRate        float64 `json:"job_rate"`
	Witness        string  `json:"never_killed_by_design"`

	Faults     []faultReport `json:"faults"`
	FaultKinds []kindReport  `json:"fault_kinds"`
	verdict
	Edges           []edgeReport `json:"edges"`
	ProcessProblems []string     `json:"process_problems"` // unexpected exits, panics in logs
	Checks          []check      `json:"checks"`
	Passed          bool         `json:"passed"`
}

type faultReport struct {
	N      int     `json:"n"`
	Kind   string  `json:"kind"`
	Target string  `json:"target"`
	AtS    float64 `json:"at_s"`   // from the start of the load (warm-up included)
	BackS  float64 `json:"back_s"` // kill to back and ready (-1: never)
	SeenS  float64 `json:"seen_s"` // back to seen by every edge (-1: not within 60 s)
	Err    string  `json:"error,omitempty"`
	// Outcome is what the fault did and what came of it (cell-mid-answer: the job cut and what
	// its runner saw; runner-reset-parked: the polls reset and the jobs handed out onto them).
	Outcome string `json:"outcome,omitempty"`
}

type edgeReport struct {
	Edge             string  `json:"edge"`
	Kills            int     `json:"kills"`
	NeverKilled      bool    `json:"never_killed"`
	GoroutinesBefore float64 `json:"goroutines_before"`
	GoroutinesMax    float64 `json:"goroutines_max"`
	GoroutinesAfter  float64 `json:"goroutines_after"`
	GoroutinesLimit  float64 `json:"goroutines_limit"`
	RSSBeforeMiB     float64 `json:"rss_before_mib"`
	RSSMaxMiB        float64 `json:"rss_max_mib"`
	RSSAfterMiB      float64 `json:"rss_after_mib"`
	RSSLimitMiB      float64 `json:"rss_limit_mib"`
	HeapBeforeMiB    float64 `json:"heap_inuse_before_mib"`
	HeapAfterMiB     float64 `json:"heap_inuse_after_mib"`
	SettledS         float64 `json:"settled_s"` // after the load, until within the limits (-1: not within -settle)
}

type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Warn   bool   `json:"warning,omitempty"` // reported, does not fail the run
	Detail string `json:"detail"`
}

type resultInput struct {
	version              string
	witness              int
	never                []int
	before, after, max   []edgeSample
	settled              time.Duration
	chaosStart, chaosEnd time.Time
}

func mib(b float64) float64 { return round1(b / (1 << 20)) }

// result reads the cells' ledgers and the logs, judges, and runs the checks.
func (s *soak) result(ctx context.Context, in resultInput) result {
	c := s.c
	r := result{StartedAt: s.t0.UTC().Format(time.RFC3339), Edge: in.version, Seed: s.o.seed, Quick: s.o.quick,
		ChaosS: round1(in.chaosEnd.Sub(in.chaosStart).Seconds()), WarmupS: s.o.warmup.Seconds(), GraceS: s.o.grace.Seconds(),
		Runners: s.o.runners, WorkspaceLoops: s.o.workspace, JobRate: s.o.jobRate, Witness: c.edges[in.witness].name}
	ledgers := map[uint64]*bench.Ledger{}
	var ledgerErrs []string
	for _, cs := range c.cells {
		l, err := readLedgerFile(cs.ledger)
		if err != nil {
			ledgerErrs = append(ledgerErrs, err.Error())
			continue
		}
		ledgers[cs.id] = l
	}
	faults := s.faults.snapshot()
	dups := map[string]map[string][]time.Time{}
	for _, u := range c.upstreams {
		if d := u.duplicates(); len(d) > 0 {
			dups[u.agent] = d
		}
	}
	s.jobsMu.Lock()
	ev := evidence{attempts: s.rec.all(), faults: faults, grace: s.o.grace, ledgers: ledgers, receipts: s.receipts,
		queued: s.queued, queueRefused: s.queueRefused, upstreamDups: dups, resets: s.resets, procs: c.processes(), t0: s.t0}
	r.verdict = judge(ev)
	s.jobsMu.Unlock()
	outcomes, kindReports := faultOutcomes(faults, r.verdict)
	r.FaultKinds = kindReports

	kinds := map[string]int{}
	allBack := true
	for _, f := range faults {
		kinds[f.Kind]++
		fr := faultReport{N: f.N, Kind: f.Kind, Target: f.Target, AtS: round1(f.Start.Sub(s.t0).Seconds()), BackS: -1, SeenS: -1, Err: f.Err,
			Outcome: outcomes[f.N]}
		if !f.End.IsZero() {
			fr.BackS = round1(f.End.Sub(f.Start).Seconds())
		} else {
			allBack = false
		}
		if !f.Recovered.IsZero() {
			fr.SeenS = round1(f.Recovered.Sub(f.End).Seconds())
		} else {
			allBack = false
		}
		r.Faults = append(r.Faults, fr)
	}

	settledOK := in.settled >= 0
	for i, es := range c.edges {
		c.mu.Lock()
		kills := es.kills
		c.mu.Unlock()
		e := edgeReport{Edge: es.name, Kills: kills, NeverKilled: slices.Contains(in.never, i),
			GoroutinesBefore: in.before[i].Goroutines, GoroutinesMax: in.max[i].Goroutines, GoroutinesAfter: in.after[i].Goroutines,
			GoroutinesLimit: goroutineLimit(in.before[i].Goroutines),
			RSSBeforeMiB:    mib(in.before[i].RSS), RSSMaxMiB: mib(in.max[i].RSS), RSSAfterMiB: mib(in.after[i].RSS),
			RSSLimitMiB:   mib(rssLimit(in.before[i].RSS)),
			HeapBeforeMiB: mib(in.before[i].Heap), HeapAfterMiB: mib(in.after[i].Heap), SettledS: -1}
		if e.NeverKilled && settledOK {
			e.SettledS = round1(in.settled.Seconds())
		}
		r.Edges = append(r.Edges, e)
	}

	for _, err := range c.exitedUnexpectedly() {
		r.ProcessProblems = append(r.ProcessProblems, err.Error())
	}
	r.ProcessProblems = append(r.ProcessProblems, scanLogs(c.dir)...)
	r.ProcessProblems = append(r.ProcessProblems, ledgerErrs...)

	j := r.Jobs
	var inside5xx, outside5xx, outsideOther int
	for _, fc := range r.Edge5xx {
		inside5xx += fc.Inside
		outside5xx += fc.Outside
	}
	for _, fc := range r.OtherFailures {
		outsideOther += fc.Outside
	}
	okRequests := 0
	for _, k := range r.Requests {
		okRequests += k.OK
	}
	var missing []string
	for _, k := range s.o.kinds {
		if kinds[k] == 0 {
			missing = append(missing, k)
		}
	}
	var neverNames []string
	var leaks []string
	for _, i := range in.never {
		e := r.Edges[i]
		neverNames = append(neverNames, e.Edge)
		if e.GoroutinesAfter > e.GoroutinesLimit {
			leaks = append(leaks, fmt.Sprintf("%s goroutines %.0f > %.0f", e.Edge, e.GoroutinesAfter, e.GoroutinesLimit))
		}
		if e.RSSAfterMiB > e.RSSLimitMiB {
			leaks = append(leaks, fmt.Sprintf("%s RSS %.1f MiB > %.1f MiB", e.Edge, e.RSSAfterMiB, e.RSSLimitMiB))
		}
	}
	add := func(name string, ok bool, detail string) {
		r.Checks = append(r.Checks, check{Name: name, OK: ok, Detail: detail})
	}
	add("the load ran", j.Finished > 0 && okRequests > 0, fmt.Sprintf("%d jobs finished, %d requests answered as wanted", j.Finished, okRequests))
	x := r.Exits
	add("zero edge exits other than the kill -9s", len(x.EdgeOther) == 0,
		fmt.Sprintf("%d edge processes, %d ended by the script's kill -9, %d exited otherwise: %s", x.EdgeProcesses, x.EdgeKilled, len(x.EdgeOther), orNone(x.EdgeOther)))
	add("every kind of fault ran", len(missing) == 0, fmt.Sprintf("%d faults: %s; missing: %s", len(faults), countList(kinds), orNone(missing)))
	add("every fault was over (back, then seen by every edge)", allBack && len(faults) > 0, fmt.Sprintf("%d faults", len(faults)))
	add("no job handed out twice", len(j.ClaimedTwice)+len(j.ReceivedTwice)+len(j.ReceivedNotClaimed)+len(j.WrongRequest) == 0,
		fmt.Sprintf("claimed twice by a cell %v, received twice %v, received but not claimed %v, answer to the wrong request %v",
			idList(j.ClaimedTwice), idList(j.ReceivedTwice), idList(j.ReceivedNotClaimed), idList(j.WrongRequest)))
	add("every job a runner got was finished", len(j.Unfinished) == 0, fmt.Sprintf("%d of %d finished; %s", j.Finished, j.Received, orNone(j.Unfinished)))
	add("no job lost outside a fault", len(j.LostOutside) == 0, fmt.Sprintf("%d claim answers lost in a fault window, %d outside", len(j.LostInFault), len(j.LostOutside)))
	if slices.Contains(s.o.kinds, faultCellCut) || len(j.CutAtCell) > 0 {
		add("cut answers: the job reached no runner, its runner got a 502 or a closed connection and polled again", cutsOK(j.CutAtCell),
			fmt.Sprintf("%d answers cut at a cell (jobs lost at the cell, as GitLab's stuck running until their timeout; counted apart from edge's): %s", len(j.CutAtCell), describeCuts(j.CutAtCell)))
	}
	if slices.Contains(s.o.kinds, faultRunnerReset) || len(j.OntoReset) > 0 {
		late := 0
		for _, rj := range j.OntoReset {
			if rj.Late {
				late++
			}
		}
		r.Checks = append(r.Checks, check{Name: "reset polls: edge closed the cell's request of each one reset without a byte", OK: late == 0, Warn: len(j.OntoReset) > 0,
			Detail: fmt.Sprintf("%d parked polls reset (%d after a byte of a next request); jobs handed out onto them: %d (listed: a job handed to nobody, a warning); of them more than %s after a reset without a byte (a failure: edge held a dead poll): %d",
				r.Resets.Polls, r.Resets.WithByte, len(j.OntoReset), lateClaim, late)})
	}
	add("no job left queued", len(j.StillQueued) == 0 && len(j.NotInLedger) == 0,
		fmt.Sprintf("never handed out %v, queued but not in a ledger %v", idList(j.StillQueued), idList(j.NotInLedger)))
	add("no request reached a cell or upstream twice", len(r.CellDups)+len(r.UpstreamDups) == 0,
		fmt.Sprintf("%d at cells, %d at upstreams", len(r.CellDups), len(r.UpstreamDups)))
	r.Checks = append(r.Checks, check{Name: "no GET sent again by edge during a fault", OK: true, Warn: len(r.ResentIdempotent) > 0,
		Detail: fmt.Sprintf("%d GETs reached an upstream or cell twice during a fault (a warning, not a failure: RFC 9110 lets an intermediary repeat an idempotent request; README says edge re-sends only what never reached the upstream)", len(r.ResentIdempotent))})
	add("edge-made 5xx only inside fault windows", outside5xx == 0, fmt.Sprintf("%d inside, %d outside (grace %s)", inside5xx, outside5xx, s.o.grace))
	add("no other failed request outside fault windows", outsideOther == 0, fmt.Sprintf("%d outside", outsideOther))
	add("no process died unasked, no panic", len(r.ProcessProblems) == 0, orNone(r.ProcessProblems))
	add("edges never killed back near their baseline", len(in.never) > 0 && len(leaks) == 0 && settledOK,
		fmt.Sprintf("%s; %s", strings.Join(neverNames, ", "), orNone(leaks)))
	r.Passed = true
	for _, ch := range r.Checks {
		r.Passed = r.Passed && ch.OK
	}
	return r
}

func readLedgerFile(path string) (*bench.Ledger, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := bench.ReadLedger(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return l, nil
}

// scanLogs finds panics and races in the processes' logs.
func scanLogs(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var out []string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") || strings.Contains(line, "DATA RACE") ||
				strings.Contains(line, `"panic"`) {
				out = append(out, fmt.Sprintf("%s:%d: %s", filepath.Base(name), n, truncate(line, 200)))
			}
		}
		f.Close()
	}
	return out
}

func countList(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return orNone(parts)
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	if len(list) > 10 {
		return strings.Join(list[:10], "; ") + fmt.Sprintf("; and %d more", len(list)-10)
	}
	return strings.Join(list, "; ")
}

func idList(ids []uint64) string {
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprint(id))
	}
	return "[" + orNone(s) + "]"
}

func (r result) markdown() string {
	var b strings.Builder
	status := "PASSED"
	if !r.Passed {
		status = "FAILED"
	}
	fmt.Fprintf(&b, "## Chaos soak: %s\n\n", status)
	fmt.Fprintf(&b, "%s; seed %d; %.0f s of chaos after %.0f s of warm-up; %d runners, %d workspace loops, %.1f jobs/s; grace %.0f s after each fault; %s never killed by design.\n\n",
		r.Edge, r.Seed, r.ChaosS, r.WarmupS, r.Runners, r.WorkspaceLoops, r.JobRate, r.GraceS, r.Witness)
	j := r.Jobs
	b.WriteString("| measure | value |\n|---|---|\n")
	row := func(k, format string, a ...any) { fmt.Fprintf(&b, "| %s | %s |\n", k, fmt.Sprintf(format, a...)) }
	row("jobs queued", "%d (and %d queue requests refused while the cell was down)", j.QueuedBySoak, j.QueueRefused)
	row("jobs handed out (cells' ledgers) / received by runners / finished", "%d / %d / %d", j.Claimed, j.Received, j.Finished)
	row("handed out twice / received twice / received unclaimed / wrong request", "%d / %d / %d / %d", len(j.ClaimedTwice), len(j.ReceivedTwice), len(j.ReceivedNotClaimed), len(j.WrongRequest))
	row("claim answers lost in a fault window / outside", "%d / %d", len(j.LostInFault), len(j.LostOutside))
	row("handed out in an answer the cell cut (cell-mid-answer) / onto a poll its runner reset (runner-reset-parked)", "%d / %d", len(j.CutAtCell), len(j.OntoReset))
	row("hand-outs accounted for", "%d received + %d cut at a cell + %d onto reset polls + %d lost in a fault + %d lost outside = %d of %d handed out",
		j.Received, len(j.CutAtCell), len(j.OntoReset), len(j.LostInFault), len(j.LostOutside),
		j.Received+len(j.CutAtCell)+len(j.OntoReset)+len(j.LostInFault)+len(j.LostOutside), j.Claimed)
	row("edge processes / ended by kill -9 / exited otherwise", "%d / %d / %d", r.Exits.EdgeProcesses, r.Exits.EdgeKilled, len(r.Exits.EdgeOther))
	row("received and not finished / left queued", "%d / %d", len(j.Unfinished), len(j.StillQueued))
	var in5, out5, inO, outO int
	for _, fc := range r.Edge5xx {
		in5 += fc.Inside
		out5 += fc.Outside
	}
	for _, fc := range r.OtherFailures {
		inO += fc.Inside
		outO += fc.Outside
	}
	for _, k := range r.Requests {
		row("requests: "+k.Kind, "%d, %d as wanted, failed %d inside fault windows, %d outside", k.Total, k.OK, k.Inside, k.Outside)
	}
	row("edge-made 5xx inside / outside fault windows", "%d / %d", in5, out5)
	row("other failures (no answer, unexpected answer) inside / outside", "%d / %d", inO, outO)
	row("requests that reached a cell / an upstream twice", "%d / %d, and %d GETs edge sent again during a fault (%d the soak's own transport sent twice)", len(r.CellDups), len(r.UpstreamDups), len(r.ResentIdempotent), len(r.ClientResent))
	for _, e := range r.Edges {
		if !e.NeverKilled {
			continue
		}
		row(e.Edge+" (never killed) goroutines before / max / after", "%.0f / %.0f / %.0f (limit %.0f)", e.GoroutinesBefore, e.GoroutinesMax, e.GoroutinesAfter, e.GoroutinesLimit)
		row(e.Edge+" (never killed) RSS before / max / after", "%.1f / %.1f / %.1f MiB (limit %.1f; settled in %.0f s)", e.RSSBeforeMiB, e.RSSMaxMiB, e.RSSAfterMiB, e.RSSLimitMiB, e.SettledS)
	}

	b.WriteString("\n### Faults\n\nWindow: from the kill to back and ready (an edge: `/readyz` 200 and its agents connected to it again; Redis: PING; a cell: its readiness endpoint; an agent: listed by its edge; a cell-mid-answer: from the order to cut to the cell back; a runner-reset-parked: from its runners' first job requests to their last reset), plus the grace. \"seen\": from back to every edge seeing it (cells up in `edge_cell_up`, agents listed by every edge).\n\n")
	b.WriteString("| kind | faults | outcome |\n|---|---|---|\n")
	for _, k := range r.FaultKinds {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", k.Kind, k.Faults, k.Outcome)
	}
	b.WriteString("\n| # | kind | target | at | back after | seen after | outcome | error |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f s | %s | %s | %s | %s |\n", f.N, f.Kind, f.Target, f.AtS, secs(f.BackS), secs(f.SeenS), f.Outcome, f.Err)
	}
	failTable := func(title string, rows []failureCount) {
		fmt.Fprintf(&b, "\n### %s\n\n", title)
		if len(rows) == 0 {
			b.WriteString("none\n")
			return
		}
		b.WriteString("| request: answer | inside | outside | during faults of kind |\n|---|---|---|---|\n")
		for _, fc := range rows {
			fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", fc.What, fc.Inside, fc.Outside, strings.Join(fc.Faults, ", "))
		}
	}
	failTable("Edge-made 5xx, by status and cause", r.Edge5xx)
	failTable("Other failed requests", r.OtherFailures)
	if len(j.LostInFault)+len(j.LostOutside) > 0 {
		b.WriteString("\n### Jobs handed out whose answer never reached a runner\n\nThe cell wrote its ledger line before the 201; the job stays `running` at the cell (GitLab would time it out as stuck).\n\n| job | cell | at | the runner's request ended with | fault |\n|---|---|---|---|---|\n")
		for _, l := range append(append([]lostJob(nil), j.LostInFault...), j.LostOutside...) {
			fmt.Fprintf(&b, "| %d | %d | %.1f s | %s | %s |\n", l.ID, l.Cell, l.AtS, l.Outcome, cmpOr(l.Fault, "**none**"))
		}
	}
	if len(j.CutAtCell) > 0 {
		b.WriteString("\n### Jobs handed out in an answer the cell cut\n\nThe cell wrote its claim and its cut to the ledger, then half the 201's body, and exited: the job stays `running` at the cell (GitLab would time it out as stuck); lost at the cell, not by edge.\n\n| job | cell | at | runner | its request ended with | polled again | a runner got it | fault |\n|---|---|---|---|---|---|---|---|\n")
		for _, cj := range j.CutAtCell {
			fmt.Fprintf(&b, "| %d | %d | %.1f s | %d | %s | %v | %v | %s |\n", cj.ID, cj.Cell, cj.AtS, cj.Runner, cj.RunnerSaw, cj.PolledAgain, cj.Received, cmpOr(cj.Fault, "**none**"))
		}
	}
	if len(j.OntoReset) > 0 {
		b.WriteString("\n### Jobs handed out onto a poll its runner had reset\n\nThe cell answered a job request whose runner had reset its connection (or reset as the answer came: a negative delay): the job went to nobody. After a byte of a next request edge no longer reads the runner's side (as net/http's background read), so it learns of the reset only when it writes the answer.\n\n| job | cell | request | edge | byte first | claim after the reset | fault |\n|---|---|---|---|---|---|---|\n")
		for _, rj := range j.OntoReset {
			late := ""
			if rj.Late {
				late = " **late**"
			}
			fmt.Fprintf(&b, "| %d | %d | %s | edge%d | %v | %d ms%s | %s |\n", rj.ID, rj.Cell, rj.Req, rj.Edge, rj.WithByte, rj.AfterResetMS, late, rj.Fault)
		}
	}
	if len(r.Exits.EdgeOther)+len(r.Exits.Asked) > 0 {
		b.WriteString("\n### Processes that exited without a kill -9\n\n")
		for _, e := range r.Exits.EdgeOther {
			fmt.Fprintf(&b, "- **edge exited unasked**: %s\n", e)
		}
		for _, e := range r.Exits.Asked {
			fmt.Fprintf(&b, "- asked: %s\n", e)
		}
	}
	dupRows := func(class string, ds []duplicate) {
		for _, d := range ds {
			var at []string
			for _, x := range d.Arrivals {
				at = append(at, fmt.Sprintf("%.3f s", x))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", d.Req, class, d.Where, strings.Join(at, ", "), d.Sent, d.Fault)
		}
	}
	if len(r.CellDups)+len(r.UpstreamDups)+len(r.ResentIdempotent)+len(r.ClientResent) > 0 {
		b.WriteString("\n### Requests that arrived more than once\n\n| request | sent twice by | where | arrived at | the soak's request | fault |\n|---|---|---|---|---|---|\n")
		dupRows("**edge**", r.CellDups)
		dupRows("**edge**", r.UpstreamDups)
		dupRows("edge (a GET, in a fault)", r.ResentIdempotent)
		dupRows("the soak's transport", r.ClientResent)
	}
	if len(r.OutsideSamples) > 0 {
		b.WriteString("\n### Failures outside fault windows (first 30)\n\n")
		for _, s := range r.OutsideSamples {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	b.WriteString("\n### Edges\n\n| edge | killed | goroutines before / max / after (limit) | RSS MiB before / max / after (limit) | heap MiB before / after |\n|---|---|---|---|---|\n")
	for _, e := range r.Edges {
		note := ""
		if !e.NeverKilled {
			note = " (restarted: after is a new process)"
		}
		fmt.Fprintf(&b, "| %s | %d%s | %.0f / %.0f / %.0f (%.0f) | %.1f / %.1f / %.1f (%.1f) | %.1f / %.1f |\n", e.Edge, e.Kills, note,
			e.GoroutinesBefore, e.GoroutinesMax, e.GoroutinesAfter, e.GoroutinesLimit, e.RSSBeforeMiB, e.RSSMaxMiB, e.RSSAfterMiB, e.RSSLimitMiB, e.HeapBeforeMiB, e.HeapAfterMiB)
	}
	b.WriteString("\n### Checks\n\n| check | | detail |\n|---|---|---|\n")
	for _, ch := range r.Checks {
		mark := "ok"
		switch {
		case !ch.OK:
			mark = "**FAILED**"
		case ch.Warn:
			mark = "warning"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", ch.Name, mark, strings.ReplaceAll(ch.Detail, "|", "/"))
	}
	return b.String()
}

func cutsOK(cuts []cutJob) bool {
	for _, cj := range cuts {
		if !cj.OK {
			return false
		}
	}
	return true
}

func describeCuts(cuts []cutJob) string {
	var parts []string
	for _, cj := range cuts {
		p := fmt.Sprintf("job %d: runner %d saw %s", cj.ID, cj.Runner, cj.RunnerSaw)
		if !cj.PolledAgain {
			p += ", did not poll again"
		}
		if cj.Received {
			p += ", A RUNNER GOT THE JOB"
		}
		parts = append(parts, p)
	}
	return orNone(parts)
}

func secs(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", s)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// write puts chaos.json and chaos.md into dir.
func (r result) write(dir string) error {
	return bench.WriteResults(dir, "chaos", r, "# Chaos soak\n\n"+r.markdown())
}
