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
	Move            *moveReport  `json:"org_move,omitempty"`
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
	if s.o.move {
		m := judgeMove(ev, s.moves.snapshot())
		r.Move = &m
	}
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
	if r.Move != nil {
		r.Checks = append(r.Checks, r.Move.checks(len(movePlan))...)
	}
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

// write puts chaos.json and chaos.md into dir.
func (r result) write(dir string) error {
	return bench.WriteResults(dir, "chaos", r, "# Chaos soak\n\n"+r.markdown())
}
