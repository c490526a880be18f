package bench

import (
	"fmt"
	"slices"
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

// The goals of issue 26 (edge's own HTTP/1.1 engine on its public listener): ratios of medians
// in one run, and the long-poll soak.
const (
	Goal26GetVsNginx      = 0.9  // GET of a 1 KiB answer, edge against nginx, req/s
	Goal26GetCPUVsNginx   = 1.3  // the same GET, edge's proxy CPU per request over nginx's
	Goal26PostVsNginx     = 0.8  // a 512 B POST, edge against nginx, req/s
	Goal26TransferVsNginx = 0.95 // 10 MiB through edge against through nginx, MB/s, each direction
	Goal26TLSVsNginx      = 0.8  // a GET over TLS, edge against nginx (bench/cmd/tlsbench)
	Goal26RoutedVsEdgeA   = 0.9  // edge-b, edge-c, edge-d each against edge-a, req/s
	// Goal26LongPolls is the issue's count; the row holds the soak to GoalLongPolls, the most
	// this machine holds, with the issue's memory bound.
	Goal26LongPolls      = 10000
	Goal26LongPollRSSMiB = 150
)

// Issues whose goals the table holds (Goal.Group).
const (
	Issue18 = 18
	Issue26 = 26
)

// Case IDs of issue 26's cases: a GET of a 1 KiB answer through nginx and through edge, the
// 512 B POST through nginx, and edge-a's request through an edge serving its public listener
// with net/http's server (what edge's own engine changes).
const (
	CaseNginx1K     = "nginx-1k"
	CaseEdge1K      = "edge-1k"
	CaseNginxPost   = "nginx-post"
	CaseEdgeNetHTTP = "edge-nethttp"
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

// Goal is one row of the goals table. Group is the issue that states the goal; Issue is the
// issue's own "today" figure, Today the one measured by this run. Measured is false when the
// cases it needs were not run; Met is then false too. Info rows hold a figure without a goal:
// they are never met.
type Goal struct {
	Group    int    `json:"issue"`
	Case     string `json:"case"`
	Issue    string `json:"issue_figure"`
	Today    string `json:"today"`
	Goal     string `json:"goal"`
	Met      bool   `json:"met"`
	Info     bool   `json:"info,omitempty"`
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
	const post = "POST with a 512 B body on the legacy route (edge-post), CPU per request vs a plain `httputil` proxy (plain-post)"
	return inGroup(Issue18, []Goal{
		withIssue("0.46-0.54x", rpsGoal(in, "(a) plain GET, legacy route, access log on (edge-a) vs nginx req/s", CaseEdgeA, CaseNginx, GoalEdgeAVsNginx)),
		withIssue("0.86x", rpsGoal(in, "(c) token in a JSON body (edge-c) vs (a) req/s", CaseEdgeC, CaseEdgeA, GoalTokenVsEdgeA)),
		withIssue("0.89x", rpsGoal(in, "(d) verified job JWT (edge-d) vs (a) req/s", CaseEdgeD, CaseEdgeA, GoalTokenVsEdgeA)),
		withIssue("1.2x", cpuGoal(in, post, CaseEdgePost, CasePlainPost, GoalPostCPUVsPlain)),
		withIssue("0.57x", rpsGoal(in, "tunnel request (edge > agent) vs (a) req/s", CaseTunnel, CaseEdgeA, GoalTunnelVsEdgeA)),
		withIssue("0.34x", rpsGoal(in, "edge-to-edge hop (edge2 > edge > agent) vs (a) req/s", CaseTunnelHop, CaseEdgeA, GoalHopVsEdgeA)),
		withIssue("0.29x down, 0.19x up", transferGoal(in,
			"10 MiB through a tunnel vs direct loopback, each direction (transfer, tunnel path, pinned)", CaseTunnel, CaseDirect, GoalTransferVsDirect)),
		withIssue("RSS 516 MiB", longPollGoal(in, fmt.Sprintf("%s held `jobs/request` long polls (the machine's limit)", thousands(GoalLongPolls)), GoalLongPollRSSMiB)),
		withIssue(notInIssue, rpsGoal(in, "(b) routable token in a header (edge-b) vs (a) req/s", CaseEdgeB, CaseEdgeA, GoalTokenVsEdgeA)),
		withIssue(notInIssue, addedP99Goal(in)),
	})
}

// Goals26 is issue 26's goals table, a row per goal in the issue's order, all from the same run:
// edge's own engine against nginx (GET of 1 KiB, the 512 B POST, 10 MiB each way), TLS (which
// bench/cmd/tlsbench measures, not this harness), the long polls, the routed cases against
// edge-a; then edge-a against the same edge on net/http's server, a figure without a goal.
func Goals26(in GoalInput) []Goal {
	longPolls := fmt.Sprintf("%s held `jobs/request` long polls (the issue's %s; %s is the machine's limit)",
		thousands(GoalLongPolls), thousands(Goal26LongPolls), thousands(GoalLongPolls))
	return inGroup(Issue26, []Goal{
		rpsGoal(in, "GET of a 1 KiB answer, legacy route, access log on (edge-1k) vs nginx (nginx-1k) req/s", CaseEdge1K, CaseNginx1K, Goal26GetVsNginx),
		cpuGoal(in, "GET of a 1 KiB answer (edge-1k), proxy CPU per request vs nginx (nginx-1k)", CaseEdge1K, CaseNginx1K, Goal26GetCPUVsNginx),
		rpsGoal(in, "POST with a 512 B body, legacy route (edge-post) vs nginx (nginx-post) req/s", CaseEdgePost, CaseNginxPost, Goal26PostVsNginx),
		transferGoal(in, "10 MiB through edge (edge-a) vs through nginx, each direction (transfer, pinned)", CaseEdgeA, CaseNginx, Goal26TransferVsNginx),
		notRun("GET over TLS, edge vs nginx req/s", fmt.Sprintf(">= %gx", Goal26TLSVsNginx), "bench/cmd/tlsbench"),
		longPollGoal(in, longPolls, Goal26LongPollRSSMiB),
		rpsGoal(in, "(b) routable token in a header (edge-b) vs (a) req/s", CaseEdgeB, CaseEdgeA, Goal26RoutedVsEdgeA),
		rpsGoal(in, "(c) token in a JSON body (edge-c) vs (a) req/s", CaseEdgeC, CaseEdgeA, Goal26RoutedVsEdgeA),
		rpsGoal(in, "(d) verified job JWT (edge-d) vs (a) req/s", CaseEdgeD, CaseEdgeA, Goal26RoutedVsEdgeA),
		engineInfo(in),
	})
}

// AllGoals are both issues' tables, issue 18's first.
func AllGoals(in GoalInput) []Goal { return append(Goals(in), Goals26(in)...) }

// GoalGroups splits goals into runs of one issue each, in their order.
func GoalGroups(goals []Goal) [][]Goal {
	var out [][]Goal
	for i, g := range goals {
		if i == 0 || g.Group != goals[i-1].Group {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], g)
	}
	return out
}

func inGroup(issue int, goals []Goal) []Goal {
	for i := range goals {
		goals[i].Group = issue
	}
	return goals
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

// cpuGoal compares what two proxies each spend of CPU per request on the same request: lower is
// better, so the goal is an upper bound.
func cpuGoal(in GoalInput, caseText, id, baseID string, goal float64) Goal {
	goalText := fmt.Sprintf("<= %.1fx", goal)
	r, base := rowByCase(in.Load, id), rowByCase(in.Load, baseID)
	if r == nil || base == nil {
		return notRun(caseText, goalText, "needs cases "+id+" and "+baseID)
	}
	v, ok := Ratio(float64(r.ProxyCPUPerRequest), float64(base.ProxyCPUPerRequest))
	if !ok {
		return Goal{Case: caseText, Goal: goalText, Today: baseID + ": no CPU measured", Measured: true}
	}
	return atGoalLoad(in, Goal{
		Case: caseText, Goal: goalText, Measured: true, Met: v <= goal,
		Today: fmt.Sprintf("%.2fx (%s %s/req, %s %s)", v, id, FormatDuration(r.ProxyCPUPerRequest),
			baseID, FormatDuration(base.ProxyCPUPerRequest)),
	})
}

// engineInfo is edge-a against the same edge serving its public listener with net/http's server
// (edge-nethttp): what edge's own HTTP/1.1 engine changes, in req/s and CPU per request. It
// holds no goal, so it is never met.
func engineInfo(in GoalInput) Goal {
	const caseText = "edge's own HTTP/1.1 engine (edge-a) vs net/http's server (edge-nethttp), req/s and proxy CPU per request"
	a, n := rowByCase(in.Load, CaseEdgeA), rowByCase(in.Load, CaseEdgeNetHTTP)
	if a == nil || n == nil {
		g := notRun(caseText, "-", "needs cases "+CaseEdgeA+" and "+CaseEdgeNetHTTP)
		g.Info = true
		return g
	}
	return atGoalLoad(in, Goal{
		Case: caseText, Goal: "-", Measured: true, Info: true,
		Today: fmt.Sprintf("req/s %s (%s %.0f, %s %.0f)%s; cpu/req %s (%s %s, %s %s)",
			ratioText(a.RPS, n.RPS), CaseEdgeA, a.RPS, CaseEdgeNetHTTP, n.RPS, perRound(*a, *n),
			ratioText(float64(a.ProxyCPUPerRequest), float64(n.ProxyCPUPerRequest)),
			CaseEdgeA, FormatDuration(a.ProxyCPUPerRequest), CaseEdgeNetHTTP, FormatDuration(n.ProxyCPUPerRequest)),
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

// transferGoal holds both directions of path against base to the goal: a proxy has to carry
// uploads as well. A direction that did not run leaves the goal unmet.
func transferGoal(in GoalInput, caseText, path, base string, goal float64) Goal {
	goalText := fmt.Sprintf(">= %gx each", goal)
	var parts []string
	met := true
	for _, dir := range []string{Download, Upload} {
		t, d := transferRow(in.Transfers, path, dir), transferRow(in.Transfers, base, dir)
		if t == nil || d == nil {
			met = false
			continue
		}
		v, ok := Ratio(t.MBps, d.MBps)
		met = met && ok && v >= goal
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

// longPollGoal holds the soak to GoalLongPolls held polls and edge's RSS to rssMiB.
func longPollGoal(in GoalInput, caseText string, rssMiB float64) Goal {
	goalText := fmt.Sprintf("held, edge RSS <= %g MiB with no GC setting, answered, none retried", rssMiB)
	var g Goal
	switch {
	case in.LongPollErr != nil:
		g = Goal{Case: caseText, Goal: goalText, Today: "unreadable result: " + in.LongPollErr.Error(), Measured: true}
	case in.LongPoll == nil:
		return notRun(caseText, goalText, "bench/cmd/longpollsoak")
	default:
		lp := in.LongPoll
		g = Goal{Case: caseText, Goal: goalText, Measured: true, Today: lp.Summary(), Met: lp.MetWithin(rssMiB)}
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
// beside today's; a table whose rows have no issue's figure (issue 26 states only goals) has
// no such column.
func GoalsMarkdown(goals []Goal) string {
	figures := slices.ContainsFunc(goals, func(g Goal) bool { return g.Issue != "" })
	var b strings.Builder
	if figures {
		b.WriteString("| case | issue's figure | today | goal | met |\n|---|---|---|---|---|\n")
	} else {
		b.WriteString("| case | today | goal | met |\n|---|---|---|---|\n")
	}
	for _, g := range goals {
		cells := []string{mdCell(g.Case), mdCell(g.Today), mdCell(g.Goal), metCell(g)}
		if figures {
			cells = slices.Insert(cells, 1, mdCell(g.Issue))
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	return b.String()
}

// metCell is "-" for a row that was not measured or holds no goal.
func metCell(g Goal) string {
	switch {
	case !g.Measured || g.Info:
		return "-"
	case g.Met:
		return "yes"
	}
	return "no"
}

// mdCell keeps a cell's text from ending the cell early.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
