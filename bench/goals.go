package bench

import (
	"fmt"
	"strings"
	"time"
)

// The issue's goals (issue 18): ratios of medians in one run, and the long-poll soak.
const (
	GoalEdgeAVsNginx     = 0.6  // (a) against nginx, req/s
	GoalTokenVsEdgeA     = 0.95 // (c), (d) (and (b), kept from issue 11) each against (a), req/s
	GoalPostCPUVsPlain   = 1.0  // a 512 B POST on the legacy route: edge's CPU per request over a plain httputil proxy's
	GoalTunnelVsEdgeA    = 0.8
	GoalHopVsEdgeA       = 0.6
	GoalTransferVsDirect = 0.4 // each direction
	GoalLongPolls        = 9900
	GoalLongPollRSSMiB   = 300
	// GoalAddedP99 is issue 11's latency bound, kept as an extra row.
	GoalAddedP99 = 2 * time.Millisecond
	// GoalConnections is the load every req/s, CPU and latency goal is stated at.
	GoalConnections = 64
)

// Case IDs of the token cases the goals compare with edge-a.
const (
	CaseEdgeB = "edge-b"
	CaseEdgeC = "edge-c"
	CaseEdgeD = "edge-d"
)

// Case IDs of the plain httputil proxy (bench/cmd/plainproxy) and of the 512 B POST through it
// and through edge.
const (
	CasePlain     = "plain"
	CasePlainPost = "plain-post"
	CaseEdgePost  = "edge-post"
)

// notInIssue is the issue's figure of a row kept from an earlier issue's goals.
const notInIssue = "- (not in issue 18)"

// Goal is one row of the goals table. Issue is the issue's own "today" figure, Today the one
// measured by this run. Measured is false when the cases it needs were not run; Met is then
// false too.
type Goal struct {
	Case     string `json:"case"`
	Issue    string `json:"issue_figure"`
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
	// GCSetting names the Go GC settings (GOGC, GOMEMLIMIT) in the environment make bench ran
	// in, which the soak's edge inherits; "" when there are none. The long-poll goal is stated
	// without any.
	GCSetting string
}

// Goals is issue 18's goals table, a row per goal in the issue's order, with the issue's figure
// and today's; then the rows kept from issue 11 that cost no extra case: (b) and the added p99.
func Goals(in GoalInput) []Goal {
	return []Goal{
		withIssue("0.46-0.54x", rpsGoal(in, "(a) plain GET, legacy route, access log on (edge-a) vs nginx req/s", CaseEdgeA, CaseNginx, GoalEdgeAVsNginx)),
		withIssue("0.86x", rpsGoal(in, "(c) token in a JSON body (edge-c) vs (a) req/s", CaseEdgeC, CaseEdgeA, GoalTokenVsEdgeA)),
		withIssue("0.89x", rpsGoal(in, "(d) verified job JWT (edge-d) vs (a) req/s", CaseEdgeD, CaseEdgeA, GoalTokenVsEdgeA)),
		withIssue("1.2x", postCPUGoal(in)),
		withIssue("0.57x", rpsGoal(in, "tunnel request (edge > agent) vs (a) req/s", CaseTunnel, CaseEdgeA, GoalTunnelVsEdgeA)),
		withIssue("0.34x", rpsGoal(in, "edge-to-edge hop (edge2 > edge > agent) vs (a) req/s", CaseTunnelHop, CaseEdgeA, GoalHopVsEdgeA)),
		withIssue("0.29x down, 0.19x up", transferGoal(in)),
		withIssue("RSS 516 MiB", longPollGoal(in)),
		withIssue(notInIssue, rpsGoal(in, "(b) routable token in a header (edge-b) vs (a) req/s", CaseEdgeB, CaseEdgeA, GoalTokenVsEdgeA)),
		withIssue(notInIssue, addedP99Goal(in)),
	}
}

func withIssue(figure string, g Goal) Goal {
	g.Issue = figure
	return g
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
		Today: fmt.Sprintf("%.2fx (%s %.0f req/s, %s %.0f)%s", v, id, r.RPS, baseID, base.RPS, perRound(*r, *base)),
	})
}

// perRound is the ratio of r to base in each round both ran, when there are several: the goal
// is the ratio of the medians, and the rounds show how much the machine moved it (two runs of
// one round ran seconds apart, the rounds minutes apart).
func perRound(r, base Row) string {
	var ratios []string
	for round := 1; round <= max(r.Rounds, base.Rounds); round++ {
		if v, ok := Ratio(r.RoundRPS[round], base.RoundRPS[round]); ok {
			ratios = append(ratios, fmt.Sprintf("%.2f", v))
		}
	}
	if len(ratios) < 2 {
		return ""
	}
	return "; by round " + strings.Join(ratios, ", ")
}

// postCPUGoal compares what edge and the plain httputil proxy each spend of CPU per request on
// the same 512 B POST: lower is better, so the goal is an upper bound.
func postCPUGoal(in GoalInput) Goal {
	const caseText = "POST with a 512 B body on the legacy route (edge-post), CPU per request vs a plain `httputil` proxy (plain-post)"
	goalText := fmt.Sprintf("<= %.1fx", GoalPostCPUVsPlain)
	e, p := rowByCase(in.Load, CaseEdgePost), rowByCase(in.Load, CasePlainPost)
	if e == nil || p == nil {
		return notRun(caseText, goalText, "needs cases "+CaseEdgePost+" and "+CasePlainPost)
	}
	v, ok := Ratio(float64(e.ProxyCPUPerRequest), float64(p.ProxyCPUPerRequest))
	if !ok {
		return Goal{Case: caseText, Goal: goalText, Today: CasePlainPost + ": no CPU measured", Measured: true}
	}
	return atGoalLoad(in, Goal{
		Case: caseText, Goal: goalText, Measured: true, Met: v <= GoalPostCPUVsPlain,
		Today: fmt.Sprintf("%.2fx (%s %s/req, %s %s)", v, CaseEdgePost, FormatDuration(e.ProxyCPUPerRequest),
			CasePlainPost, FormatDuration(p.ProxyCPUPerRequest)),
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

// transferGoal holds both directions to the goal: a tunnel has to carry uploads as well. A
// direction that did not run leaves the goal unmet.
func transferGoal(in GoalInput) Goal {
	const caseText = "10 MiB through a tunnel vs direct loopback, each direction (transfer, tunnel path, pinned)"
	goalText := fmt.Sprintf(">= %gx each", GoalTransferVsDirect)
	var parts []string
	met := true
	for _, dir := range []string{Download, Upload} {
		t, d := transferRow(in.Transfers, CaseTunnel, dir), transferRow(in.Transfers, CaseDirect, dir)
		if t == nil || d == nil {
			met = false
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
	caseText := fmt.Sprintf("%s held `jobs/request` long polls (the machine's limit)", thousands(GoalLongPolls))
	goalText := fmt.Sprintf("held, edge RSS <= %d MiB with no GC setting, answered, none retried", GoalLongPollRSSMiB)
	var g Goal
	switch {
	case in.LongPollErr != nil:
		g = Goal{Case: caseText, Goal: goalText, Today: "unreadable result: " + in.LongPollErr.Error(), Measured: true}
	case in.LongPoll == nil:
		return notRun(caseText, goalText, "bench/cmd/longpollsoak")
	default:
		lp := in.LongPoll
		g = Goal{Case: caseText, Goal: goalText, Measured: true, Today: lp.Summary(), Met: lp.Met()}
	}
	if in.GCSetting != "" {
		g.Today += ", with " + in.GCSetting
		g.Met = false
	}
	return g
}

// thousands writes n with a comma between thousands, as the issue writes its counts.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// GoalsMarkdown is the goals table as Markdown, as the issue writes it, with the issue's figure
// beside today's.
func GoalsMarkdown(goals []Goal) string {
	var b strings.Builder
	b.WriteString("| case | issue's figure | today | goal | met |\n|---|---|---|---|---|\n")
	for _, g := range goals {
		met := "no"
		switch {
		case !g.Measured:
			met = "-"
		case g.Met:
			met = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(g.Case), mdCell(g.Issue), mdCell(g.Today), mdCell(g.Goal), met)
	}
	return b.String()
}

// mdCell keeps a cell's text from ending the cell early.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
