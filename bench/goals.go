package bench

import (
	"fmt"
	"strings"
	"time"
)

// The goals (issue 11): ratios of medians, a latency bound and the long-poll soak.
const (
	GoalEdgeAVsNginx     = 0.6  // (a) against nginx
	GoalTokenVsEdgeA     = 0.95 // (b), (c), (d) each against (a): reading a token costs little
	GoalAddedP99         = 2 * time.Millisecond
	GoalTunnelVsEdgeA    = 0.75
	GoalHopVsEdgeA       = 0.5
	GoalTransferVsDirect = 0.35
	GoalLongPolls        = 10000
	GoalLongPollRSSMiB   = 300
	// GoalConnections is the load every req/s and latency goal is stated at.
	GoalConnections = 64
)

// Case IDs of the token cases the goals compare with edge-a.
const (
	CaseEdgeB = "edge-b"
	CaseEdgeC = "edge-c"
	CaseEdgeD = "edge-d"
)

// Goal is one row of the goals table. Measured is false when the cases it needs were not run;
// Met is then false too.
type Goal struct {
	Case     string `json:"case"`
	Today    string `json:"today"`
	Goal     string `json:"goal"`
	Met      bool   `json:"met"`
	Measured bool   `json:"-"`
}

// GoalInput is what the goals are measured from: edgebench's medians, and the long-poll soak's
// result when it ran.
type GoalInput struct {
	Load        []Row // at Connections
	Transfers   []TransferRow
	Connections int
	Pinned      bool      // the transfer goal is stated for pinned processes
	LongPoll    *LongPoll // nil: the soak did not run (or LongPollErr says why it is unreadable)
	LongPollErr error
}

// Goals is the goals table, a row per goal in the order, with today's figure.
func Goals(in GoalInput) []Goal {
	return []Goal{
		rpsGoal(in, "(a) plain GET, legacy route (edge-a) vs nginx req/s", CaseEdgeA, CaseNginx, GoalEdgeAVsNginx),
		rpsGoal(in, "(b) routable token in a header (edge-b) vs (a) req/s", CaseEdgeB, CaseEdgeA, GoalTokenVsEdgeA),
		rpsGoal(in, "(c) token in a JSON body (edge-c) vs (a) req/s", CaseEdgeC, CaseEdgeA, GoalTokenVsEdgeA),
		rpsGoal(in, "(d) verified job JWT (edge-d) vs (a) req/s", CaseEdgeD, CaseEdgeA, GoalTokenVsEdgeA),
		addedP99Goal(in),
		rpsGoal(in, "tunnel request (edge > agent) vs (a) req/s", CaseTunnel, CaseEdgeA, GoalTunnelVsEdgeA),
		rpsGoal(in, "edge-to-edge hop (edge2 > edge > agent) vs (a) req/s", CaseTunnelHop, CaseEdgeA, GoalHopVsEdgeA),
		transferGoal(in),
		longPollGoal(in),
	}
}

func notRun(caseText, goal, why string) Goal {
	return Goal{Case: caseText, Goal: goal, Today: "not run (" + why + ")"}
}

// atGoalLoad holds a load goal to the connections it is stated at: a figure from another load
// is shown but not counted as met.
func atGoalLoad(in GoalInput, g Goal) Goal {
	if in.Connections != GoalConnections {
		g.Today += fmt.Sprintf(" at %d connections, not %d", in.Connections, GoalConnections)
		g.Met = false
	}
	return g
}

func rpsGoal(in GoalInput, caseText, id, baseID string, goal float64) Goal {
	goalText := fmt.Sprintf(">= %gx", goal)
	r, base := rowByCase(in.Load, id), rowByCase(in.Load, baseID)
	if r == nil || base == nil {
		return notRun(caseText, goalText, "needs cases "+id+" and "+baseID)
	}
	v, ok := Ratio(r.RPS, base.RPS)
	if !ok {
		return Goal{Case: caseText, Goal: goalText, Today: fmt.Sprintf("%s: no requests", baseID), Measured: true}
	}
	return atGoalLoad(in, Goal{
		Case: caseText, Goal: goalText, Measured: true, Met: v >= goal,
		Today: fmt.Sprintf("%.2fx (%s %.0f req/s, %s %.0f)", v, id, r.RPS, baseID, base.RPS),
	})
}

func addedP99Goal(in GoalInput) Goal {
	const caseText = "added p99 latency over direct at 64 connections (edge-a p99 minus direct p99)"
	goalText := fmt.Sprintf("<= %d ms", GoalAddedP99/time.Millisecond)
	a, d := rowByCase(in.Load, CaseEdgeA), rowByCase(in.Load, CaseDirect)
	if a == nil || d == nil {
		return notRun(caseText, goalText, "needs cases edge-a and direct")
	}
	added := a.P99 - d.P99
	return atGoalLoad(in, Goal{
		Case: caseText, Goal: goalText, Measured: true, Met: added <= GoalAddedP99,
		Today: fmt.Sprintf("%s (edge-a %s, direct %s)", FormatDelta(added), FormatDuration(a.P99), FormatDuration(d.P99)),
	})
}

// transferGoal holds both directions to the goal: a tunnel has to carry uploads as well.
func transferGoal(in GoalInput) Goal {
	const caseText = "10 MiB through a tunnel vs direct loopback (transfer, tunnel path, pinned)"
	goalText := fmt.Sprintf(">= %gx", GoalTransferVsDirect)
	var parts []string
	met := true
	for _, dir := range []string{Download, Upload} {
		t, d := transferRow(in.Transfers, CaseTunnel, dir), transferRow(in.Transfers, CaseDirect, dir)
		if t == nil || d == nil {
			continue
		}
		v, ok := Ratio(t.MBps, d.MBps)
		met = met && ok && v >= GoalTransferVsDirect
		parts = append(parts, fmt.Sprintf("%s %.2fx (%.0f of %.0f MB/s)", dir, v, t.MBps, d.MBps))
	}
	if len(parts) == 0 {
		return notRun(caseText, goalText, "needs case transfer")
	}
	g := Goal{Case: caseText, Goal: goalText, Measured: true, Met: met, Today: strings.Join(parts, ", ")}
	if !in.Pinned {
		g.Today += ", not pinned"
		g.Met = false
	}
	return g
}

func longPollGoal(in GoalInput) Goal {
	const caseText = "10,000 held `jobs/request` long polls"
	goalText := fmt.Sprintf("held, edge RSS <= %d MiB, answered, none retried", GoalLongPollRSSMiB)
	switch {
	case in.LongPollErr != nil:
		return Goal{Case: caseText, Goal: goalText, Today: "unreadable result: " + in.LongPollErr.Error(), Measured: true}
	case in.LongPoll == nil:
		return notRun(caseText, goalText, "bench/cmd/longpollsoak")
	}
	lp := in.LongPoll
	return Goal{Case: caseText, Goal: goalText, Measured: true, Today: lp.Summary(), Met: lp.Met()}
}

// GoalsMarkdown is the goals table as Markdown, as the issue writes it.
func GoalsMarkdown(goals []Goal) string {
	var b strings.Builder
	b.WriteString("| case | goal | today | met |\n|---|---|---|---|\n")
	for _, g := range goals {
		met := "no"
		switch {
		case !g.Measured:
			met = "-"
		case g.Met:
			met = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCell(g.Case), mdCell(g.Goal), mdCell(g.Today), met)
	}
	return b.String()
}

// mdCell keeps a cell's text from ending the cell early.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
