package main

import (
	"fmt"
	"strings"
)

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

	if m := r.Move; m != nil {
		b.WriteString(m.markdown())
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

func (m moveReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Organization %d's move\n\nTaken: from the first call to an edge answering it (again through another edge when one does not); followed: from then to every edge up listing it on its status page.\n\n", m.Org)
	b.WriteString("| step | at | cell | phase | calls | taken after | followed after | edges down | fault |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, st := range m.Steps {
		cell := fmt.Sprint(st.Cell)
		if st.Phase == phaseForget {
			cell = "-"
		}
		fmt.Fprintf(&b, "| %d | %.1f s | %s | %s | %d | %s | %.0f ms | %s | %s |\n", st.N, st.AtS, cell, st.Phase, st.Tries, secs(st.TakenS), st.FollowedMS, orNone(st.Missed), cmpOr(st.Fault, "-"))
	}
	fmt.Fprintf(&b, "\nIts runners' job requests: %d held back by edge while frozen (204, Retry-After), %d reached a cell while frozen, %d reached the cell it lived in, %d another cell (%d inside a fault window); %d jobs of cell %d taken by its runners.\n",
		m.HeldBack, len(m.FrozenAtCell), m.Placed, len(m.Misplaced)+m.MisplacedInFault, m.MisplacedInFault, m.AwayJobs, moveAway)
	return b.String()
}
