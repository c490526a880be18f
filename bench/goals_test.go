package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// goalLoad is a run where every load goal is met but one: edge-c is slower than 0.95x of edge-a.
func goalLoad() []Row {
	ms, us := time.Millisecond, time.Microsecond
	return []Row{
		{Case: "direct", RPS: 40000, P99: 2 * ms},
		{Case: "nginx", RPS: 25000, P99: 3 * ms, HasProxy: true, ProxyCPUPerRequest: 20 * us},
		{Case: "plain", RPS: 22000, HasProxy: true, ProxyCPUPerRequest: 28 * us},
		{Case: "edge-a", RPS: 20000, P99: 3500 * us, HasProxy: true, ProxyCPUPerRequest: 30 * us},
		{Case: "edge-b", RPS: 19500},
		{Case: "edge-c", RPS: 18000},
		{Case: "edge-d", RPS: 19000},
		{Case: "plain-post", RPS: 15000, HasProxy: true, ProxyCPUPerRequest: 40 * us},
		{Case: "edge-post", RPS: 16000, HasProxy: true, ProxyCPUPerRequest: 38 * us},
		{Case: "tunnel", RPS: 16000},
		{Case: "tunnel-hop", RPS: 11000},
	}
}

func goalTransfers() []TransferRow {
	return []TransferRow{
		{Path: "direct", Direction: Download, MBps: 2000},
		{Path: "tunnel", Direction: Download, MBps: 800},
		{Path: "direct", Direction: Upload, MBps: 1500},
		{Path: "tunnel", Direction: Upload, MBps: 600},
	}
}

// Rows of the goals table, in issue 18's order, then the rows kept from issue 11.
const (
	rowA = iota
	rowC
	rowD
	rowPost
	rowTunnel
	rowHop
	rowTransfer
	rowLongPoll
	rowB
	rowAddedP99
	goalRows
)

func TestGoals(t *testing.T) {
	full := GoalInput{Load: goalLoad(), Transfers: goalTransfers(), Connections: 64, Pinned: true}
	withPost := func(edge, plain time.Duration) GoalInput {
		return GoalInput{Connections: 64, Load: []Row{
			{Case: "plain-post", HasProxy: true, ProxyCPUPerRequest: plain}, {Case: "edge-post", HasProxy: true, ProxyCPUPerRequest: edge},
		}}
	}
	us := time.Microsecond
	byRound := goalLoad()
	byRound[3].Rounds, byRound[3].RoundRPS = 3, map[int]float64{1: 20000, 2: 10000, 3: 21000}
	byRound[5].Rounds, byRound[5].RoundRPS = 3, map[int]float64{1: 19000, 2: 9000, 3: 18000}
	held := LongPoll{PollsRequested: 9900, PollsHeld: 9900, EdgeRSSMaxMiB: 212.4, Answered: 9900, Answered204: 9900}
	tests := []struct {
		name  string
		in    GoalInput
		row   int
		today string
		met   bool
		run   bool
	}{
		{"a vs nginx", full, rowA, "0.80x (edge-a 20000 req/s, nginx 25000)", true, true},
		{"c vs a: not met", full, rowC, "0.90x (edge-c 18000 req/s, edge-a 20000)", false, true},
		{"c vs a by round, in round order", GoalInput{Load: byRound, Connections: 64}, rowC, "0.90x (edge-c 18000 req/s, edge-a 20000); by round 0.95, 0.90, 0.86", false, true},
		{"d vs a: exactly the goal", full, rowD, "0.95x (edge-d 19000 req/s, edge-a 20000)", true, true},
		{"post cpu vs plain", full, rowPost, "0.95x (edge-post 38.0us/req, plain-post 40.0us)", true, true},
		{"post cpu exactly the goal", withPost(40*us, 40*us), rowPost, "1.00x (edge-post 40.0us/req, plain-post 40.0us)", true, true},
		{"post cpu over the goal", withPost(48*us, 40*us), rowPost, "1.20x (edge-post 48.0us/req, plain-post 40.0us)", false, true},
		{"post without its baseline", GoalInput{Load: goalLoad()[8:9], Connections: 64}, rowPost, "not run (needs cases edge-post and plain-post)", false, false},
		{"post, plain measured no CPU", withPost(40*us, 0), rowPost, "plain-post: no CPU measured", false, true},
		{
			"post at other connections", GoalInput{Load: goalLoad(), Connections: 32}, rowPost,
			"0.95x (edge-post 38.0us/req, plain-post 40.0us) at 32 connections, not 64", false, true,
		},
		{"tunnel vs a: exactly the goal", full, rowTunnel, "0.80x (tunnel 16000 req/s, edge-a 20000)", true, true},
		{"hop vs a, not vs tunnel", full, rowHop, "0.55x (tunnel-hop 11000 req/s, edge-a 20000)", false, true},
		{"transfer, both directions", full, rowTransfer, "download 0.40x (800 of 2000 MB/s), upload 0.40x (600 of 1500 MB/s)", true, true},
		{"long polls not run", full, rowLongPoll, "not run (bench/cmd/longpollsoak)", false, false},
		{"b vs a, kept", full, rowB, "0.97x (edge-b 19500 req/s, edge-a 20000)", true, true},
		{"added p99, kept", full, rowAddedP99, "+1.50ms (edge-a 3.50ms, direct 2.00ms)", true, true},
		{
			"other connections: shown, not met",
			GoalInput{Load: goalLoad(), Connections: 50}, rowA,
			"0.80x (edge-a 20000 req/s, nginx 25000) at 50 connections, not 64", false, true,
		},
		{
			"added p99 over the goal",
			GoalInput{Connections: 64, Load: []Row{{Case: "direct", P99: time.Millisecond}, {Case: "edge-a", P99: 3100 * time.Microsecond}}}, rowAddedP99,
			"+2.10ms (edge-a 3.10ms, direct 1.00ms)", false, true,
		},
		{"nginx not run", GoalInput{Load: goalLoad()[2:], Connections: 64}, rowA, "not run (needs cases edge-a and nginx)", false, false},
		{"no transfers", GoalInput{Connections: 64}, rowTransfer, "not run (needs case transfer)", false, false},
		{
			"transfer unpinned",
			GoalInput{Transfers: goalTransfers(), Connections: 64}, rowTransfer,
			"download 0.40x (800 of 2000 MB/s), upload 0.40x (600 of 1500 MB/s), not pinned", false, true,
		},
		{
			"transfer download only: each direction is the goal",
			GoalInput{Transfers: goalTransfers()[:2], Pinned: true}, rowTransfer,
			"download 0.40x (800 of 2000 MB/s)", false, true,
		},
		{
			"transfer upload under the goal",
			GoalInput{Transfers: append(goalTransfers()[:3], TransferRow{Path: "tunnel", Direction: Upload, MBps: 585}), Pinned: true}, rowTransfer,
			"download 0.40x (800 of 2000 MB/s), upload 0.39x (585 of 1500 MB/s)", false, true,
		},
		{"long polls held", GoalInput{LongPoll: &held}, rowLongPoll, "9900 of 9900 held, RSS 212 MiB, 9900 answered 204, 0 retried", true, true},
		{
			"long polls: more than the goal held",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 10000, PollsHeld: 10000, EdgeRSSMaxMiB: 250, Answered: 10000, Answered204: 10000}}, rowLongPoll,
			"10000 of 10000 held, RSS 250 MiB, 10000 answered 204, 0 retried", true, true,
		},
		{
			"long polls with a GC setting",
			GoalInput{LongPoll: &held, GCSetting: "GOGC=50"}, rowLongPoll,
			"9900 of 9900 held, RSS 212 MiB, 9900 answered 204, 0 retried, with GOGC=50", false, true,
		},
		{
			"long polls limited",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 9900, PollsHeld: 9000, LimitedBy: "RLIMIT_NOFILE hard 20000", EdgeRSSMaxMiB: 123, Answered: 9000, Answered204: 9000}}, rowLongPoll,
			"9000 of 9900 held (RLIMIT_NOFILE hard 20000), RSS 123 MiB, 9000 answered 204, 0 retried", false, true,
		},
		{
			"long polls retried",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 9900, PollsHeld: 9900, EdgeRSSMaxMiB: 200, Answered: 9900, Answered204: 9890, Retried: 3, Edge5xx: 2, Errors: 1}}, rowLongPoll,
			"9900 of 9900 held, RSS 200 MiB, 9900 answered (9890 with 204), 3 retried, 2 edge 5xx, 1 errors", false, true,
		},
		{
			"long polls too big: the issue's figure",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 9900, PollsHeld: 9900, EdgeRSSMaxMiB: 516, Answered: 9900, Answered204: 9900}}, rowLongPoll,
			"9900 of 9900 held, RSS 516 MiB, 9900 answered 204, 0 retried", false, true,
		},
		{"long polls unreadable", GoalInput{LongPollErr: errors.New("longpoll.json: bad")}, rowLongPoll, "unreadable result: longpoll.json: bad", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goals := Goals(tt.in)
			if len(goals) != goalRows {
				t.Fatalf("goals: got %d rows, want %d", len(goals), goalRows)
			}
			g := goals[tt.row]
			if g.Today != tt.today || g.Met != tt.met || g.Measured != tt.run {
				t.Errorf("row %d %q:\ngot  %q met %v measured %v\nwant %q met %v measured %v",
					tt.row, g.Case, g.Today, g.Met, g.Measured, tt.today, tt.met, tt.run)
			}
		})
	}
}

// TestGoalsText: issue 18's rows in its order, each with the issue's figure and its goal, then
// the rows kept from issue 11.
func TestGoalsText(t *testing.T) {
	goals := Goals(GoalInput{})
	want := [][3]string{
		{"(a) plain GET, legacy route, access log on (edge-a) vs nginx req/s", "0.46-0.54x", ">= 0.6x"},
		{"(c) token in a JSON body (edge-c) vs (a) req/s", "0.86x", ">= 0.95x"},
		{"(d) verified job JWT (edge-d) vs (a) req/s", "0.89x", ">= 0.95x"},
		{"POST with a 512 B body on the legacy route (edge-post), CPU per request vs a plain `httputil` proxy (plain-post)", "1.2x", "<= 1.0x"},
		{"tunnel request (edge > agent) vs (a) req/s", "0.57x", ">= 0.8x"},
		{"edge-to-edge hop (edge2 > edge > agent) vs (a) req/s", "0.34x", ">= 0.6x"},
		{"10 MiB through a tunnel vs direct loopback, each direction (transfer, tunnel path, pinned)", "0.29x down, 0.19x up", ">= 0.4x each"},
		{"9,900 held `jobs/request` long polls (the machine's limit)", "RSS 516 MiB", "held, edge RSS <= 300 MiB with no GC setting, answered, none retried"},
		{"(b) routable token in a header (edge-b) vs (a) req/s", "- (not in issue 18)", ">= 0.95x"},
		{"added p99 latency over direct at 64 connections (edge-a p99 minus direct p99)", "- (not in issue 18)", "<= 2 ms"},
	}
	if len(goals) != len(want) {
		t.Fatalf("goals: got %d rows, want %d", len(goals), len(want))
	}
	for i, w := range want {
		if goals[i].Case != w[0] || goals[i].Issue != w[1] || goals[i].Goal != w[2] {
			t.Errorf("row %d: got %q %q %q, want %q %q %q", i, goals[i].Case, goals[i].Issue, goals[i].Goal, w[0], w[1], w[2])
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 9900: "9,900", 10000: "10,000", 1234567: "1,234,567", -9900: "-9,900"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d): got %q, want %q", n, got, want)
		}
	}
}

func TestGoalsMarkdown(t *testing.T) {
	got := GoalsMarkdown([]Goal{
		{Case: "a", Issue: "0.5x", Goal: ">= 1x", Today: "1.2x", Met: true, Measured: true},
		{Case: "b|c", Issue: "-", Goal: "<= 2 ms", Today: "+3ms", Measured: true},
		{Case: "d", Goal: ">= 1x", Today: "not run (x)"},
	})
	want := "| case | issue's figure | today | goal | met |\n|---|---|---|---|---|\n" +
		"| a | 0.5x | 1.2x | >= 1x | yes |\n" +
		"| b\\|c | - | +3ms | <= 2 ms | no |\n" +
		"| d |  | not run (x) | >= 1x | - |\n"
	if got != want {
		t.Errorf("markdown:\ngot\n%s\nwant\n%s", got, want)
	}
	// Issue 26 states no figures of its own: no such column; an info row has no goal to meet.
	got = GoalsMarkdown([]Goal{
		{Case: "e", Goal: ">= 0.9x", Today: "0.95x", Met: true, Measured: true},
		{Case: "f", Goal: "-", Today: "1.20x", Info: true, Measured: true},
		{Case: "g", Goal: ">= 0.8x", Today: "not run (y)"},
	})
	want = "| case | today | goal | met |\n|---|---|---|---|\n" +
		"| e | 0.95x | >= 0.9x | yes |\n" +
		"| f | 1.20x | - | - |\n" +
		"| g | not run (y) | >= 0.8x | - |\n"
	if got != want {
		t.Errorf("markdown without figures:\ngot\n%s\nwant\n%s", got, want)
	}
}

func TestParseLongPoll(t *testing.T) {
	tests := []struct {
		name, in string
		want     LongPoll
		wantErr  string
	}{
		{
			name: "errors as a count",
			in: `{"polls_requested":10000,"polls_held":9000,"limited_by":"RLIMIT_NOFILE hard 20000","edge_rss_max_mib":123.5,
				"answered":9000,"answered_204":9000,"retried":0,"edge_5xx":1,"errors":2,
				"goroutines_before":10,"goroutines_held":9010,"goroutines_after":11,"extra":"ignored"}`,
			want: LongPoll{PollsRequested: 10000, PollsHeld: 9000, LimitedBy: "RLIMIT_NOFILE hard 20000", EdgeRSSMaxMiB: 123.5,
				Answered: 9000, Answered204: 9000, Edge5xx: 1, Errors: 2, GoroutinesBefore: 10, GoroutinesHeld: 9010, GoroutinesAfter: 11},
		},
		{name: "errors as a list", in: `{"polls_held":5,"errors":["dial: refused","EOF"]}`, want: LongPoll{PollsHeld: 5, Errors: 2}},
		{name: "errors null", in: `{"polls_held":5,"errors":null,"limited_by":null}`, want: LongPoll{PollsHeld: 5}},
		{name: "not JSON", in: `polls: 5`, wantErr: "longpoll.json"},
		{name: "errors a word", in: `{"errors":"many"}`, wantErr: "errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLongPoll([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error: got %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v %v, want %+v", got, err, tt.want)
			}
		})
	}
}

// goal26Load is a run where issue 26's load goals are met but two: edge-post is under 0.8x of
// nginx-post, and edge-c under 0.9x of edge-a.
func goal26Load() []Row {
	us := time.Microsecond
	return []Row{
		{Case: "nginx-1k", RPS: 20000, HasProxy: true, ProxyCPUPerRequest: 25 * us},
		{Case: "edge-1k", RPS: 18500, HasProxy: true, ProxyCPUPerRequest: 30 * us},
		{Case: "nginx-post", RPS: 20000, HasProxy: true, ProxyCPUPerRequest: 30 * us},
		{Case: "edge-post", RPS: 15000, HasProxy: true, ProxyCPUPerRequest: 40 * us},
		{Case: "edge-a", RPS: 20000, HasProxy: true, ProxyCPUPerRequest: 30 * us},
		{Case: "edge-nethttp", RPS: 16000, HasProxy: true, ProxyCPUPerRequest: 40 * us},
		{Case: "edge-b", RPS: 19000},
		{Case: "edge-c", RPS: 17000},
		{Case: "edge-d", RPS: 18000},
	}
}

func goal26Transfers() []TransferRow {
	return []TransferRow{
		{Path: "nginx", Direction: Download, MBps: 2000},
		{Path: "edge-a", Direction: Download, MBps: 1900},
		{Path: "nginx", Direction: Upload, MBps: 1500},
		{Path: "edge-a", Direction: Upload, MBps: 1400},
	}
}

// Rows of issue 26's goals table, in its order.
const (
	row26Get = iota
	row26GetCPU
	row26Post
	row26Transfer
	row26TLS
	row26LongPoll
	row26B
	row26C
	row26D
	row26Engine
	goal26Rows
)

func TestGoals26(t *testing.T) {
	full := GoalInput{Load: goal26Load(), Transfers: goal26Transfers(), Connections: 64, Pinned: true}
	with := func(rows ...Row) GoalInput { return GoalInput{Load: rows, Connections: 64} }
	us := time.Microsecond
	byRound := goal26Load()
	byRound[4].Rounds, byRound[4].RoundRPS = 2, map[int]float64{1: 20000, 2: 10000}
	byRound[5].Rounds, byRound[5].RoundRPS = 2, map[int]float64{1: 16000, 2: 10000}
	held := func(rss float64) *LongPoll {
		return &LongPoll{PollsRequested: 9900, PollsHeld: 9900, EdgeRSSMaxMiB: rss, Answered: 9900, Answered204: 9900}
	}
	tests := []struct {
		name  string
		in    GoalInput
		row   int
		today string
		met   bool
		run   bool
	}{
		{"1k req/s met", full, row26Get, "0.93x (edge-1k 18500 req/s, nginx-1k 20000)", true, true},
		{
			"1k req/s under", with(Row{Case: "nginx-1k", RPS: 20000}, Row{Case: "edge-1k", RPS: 17900}), row26Get,
			"0.90x (edge-1k 17900 req/s, nginx-1k 20000)", false, true,
		},
		{"1k req/s not run", with(goal26Load()[1:]...), row26Get, "not run (needs cases edge-1k and nginx-1k)", false, false},
		{"1k cpu met", full, row26GetCPU, "1.20x (edge-1k 30.0us/req, nginx-1k 25.0us)", true, true},
		{
			"1k cpu exactly the goal", with(Row{Case: "nginx-1k", HasProxy: true, ProxyCPUPerRequest: 30 * us}, Row{Case: "edge-1k", HasProxy: true, ProxyCPUPerRequest: 39 * us}),
			row26GetCPU, "1.30x (edge-1k 39.0us/req, nginx-1k 30.0us)", true, true,
		},
		{
			"1k cpu over", with(Row{Case: "nginx-1k", HasProxy: true, ProxyCPUPerRequest: 30 * us}, Row{Case: "edge-1k", HasProxy: true, ProxyCPUPerRequest: 42 * us}),
			row26GetCPU, "1.40x (edge-1k 42.0us/req, nginx-1k 30.0us)", false, true,
		},
		{"1k cpu not run", with(goal26Load()[:1]...), row26GetCPU, "not run (needs cases edge-1k and nginx-1k)", false, false},
		{
			"1k cpu at other connections", GoalInput{Load: goal26Load(), Connections: 32}, row26GetCPU,
			"1.20x (edge-1k 30.0us/req, nginx-1k 25.0us) at 32 connections, not 64", false, true,
		},
		{"post vs nginx under", full, row26Post, "0.75x (edge-post 15000 req/s, nginx-post 20000)", false, true},
		{
			"post vs nginx met", with(Row{Case: "nginx-post", RPS: 20000}, Row{Case: "edge-post", RPS: 16000}), row26Post,
			"0.80x (edge-post 16000 req/s, nginx-post 20000)", true, true,
		},
		{"post without nginx-post", with(goal26Load()[3:]...), row26Post, "not run (needs cases edge-post and nginx-post)", false, false},
		{"transfer vs nginx, both directions", full, row26Transfer, "download 0.95x (1900 of 2000 MB/s), upload 0.93x (1400 of 1500 MB/s)", false, true},
		{
			"transfer vs nginx met", GoalInput{Transfers: append(goal26Transfers()[:3], TransferRow{Path: "edge-a", Direction: Upload, MBps: 1500}), Pinned: true},
			row26Transfer, "download 0.95x (1900 of 2000 MB/s), upload 1.00x (1500 of 1500 MB/s)", true, true,
		},
		{
			"transfer unpinned", GoalInput{Transfers: append(goal26Transfers()[:3], TransferRow{Path: "edge-a", Direction: Upload, MBps: 1500})},
			row26Transfer, "download 0.95x (1900 of 2000 MB/s), upload 1.00x (1500 of 1500 MB/s), not pinned", false, true,
		},
		{
			"transfer without nginx", GoalInput{Transfers: goalTransfers(), Pinned: true}, row26Transfer,
			"not run (needs case transfer)", false, false,
		},
		{"tls: another harness", full, row26TLS, "not run (bench/cmd/tlsbench)", false, false},
		{"long polls not run", full, row26LongPoll, "not run (bench/cmd/longpollsoak)", false, false},
		{"long polls in 150 MiB", GoalInput{LongPoll: held(150)}, row26LongPoll, "9900 of 9900 held, RSS 150 MiB, 9900 answered 204, 0 retried", true, true},
		{
			"long polls over 150 MiB, under issue 18's 300", GoalInput{LongPoll: held(196)}, row26LongPoll,
			"9900 of 9900 held, RSS 196 MiB, 9900 answered 204, 0 retried", false, true,
		},
		{
			"long polls retried", GoalInput{LongPoll: &LongPoll{PollsRequested: 9900, PollsHeld: 9900, EdgeRSSMaxMiB: 100, Answered: 9900, Answered204: 9900, Retried: 1}},
			row26LongPoll, "9900 of 9900 held, RSS 100 MiB, 9900 answered 204, 1 retried", false, true,
		},
		{
			"long polls with a GC setting", GoalInput{LongPoll: held(100), GCSetting: "GOMEMLIMIT=100MiB"}, row26LongPoll,
			"9900 of 9900 held, RSS 100 MiB, 9900 answered 204, 0 retried, with GOMEMLIMIT=100MiB", false, true,
		},
		{"b vs a", full, row26B, "0.95x (edge-b 19000 req/s, edge-a 20000)", true, true},
		{"c vs a under", full, row26C, "0.85x (edge-c 17000 req/s, edge-a 20000)", false, true},
		{"d vs a exactly the goal", full, row26D, "0.90x (edge-d 18000 req/s, edge-a 20000)", true, true},
		{"d not run", with(goal26Load()[:8]...), row26D, "not run (needs cases edge-d and edge-a)", false, false},
		{
			"engine: a figure, never met", full, row26Engine,
			"req/s 1.25x (edge-a 20000, edge-nethttp 16000); cpu/req 0.75x (edge-a 30.0us, edge-nethttp 40.0us)", false, true,
		},
		{
			"engine by round", GoalInput{Load: byRound, Connections: 64}, row26Engine,
			"req/s 1.25x (edge-a 20000, edge-nethttp 16000); by round 1.25, 1.00; cpu/req 0.75x (edge-a 30.0us, edge-nethttp 40.0us)", false, true,
		},
		{"engine not run", with(goal26Load()[:5]...), row26Engine, "not run (needs cases edge-a and edge-nethttp)", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goals := Goals26(tt.in)
			if len(goals) != goal26Rows {
				t.Fatalf("goals: got %d rows, want %d", len(goals), goal26Rows)
			}
			g := goals[tt.row]
			if g.Today != tt.today || g.Met != tt.met || g.Measured != tt.run || g.Group != Issue26 {
				t.Errorf("row %d %q:\ngot  %q met %v measured %v issue %d\nwant %q met %v measured %v issue 26",
					tt.row, g.Case, g.Today, g.Met, g.Measured, g.Group, tt.today, tt.met, tt.run)
			}
			if got, want := g.Info, tt.row == row26Engine; got != want {
				t.Errorf("row %d: info %v, want %v", tt.row, got, want)
			}
		})
	}
}

// TestGoals26Text: issue 26's rows in its order, each with its goal and no issue's figure; the
// long polls at the machine's 9,900, not the issue's 10,000.
func TestGoals26Text(t *testing.T) {
	goals := Goals26(GoalInput{})
	want := [][2]string{
		{"GET of a 1 KiB answer, legacy route, access log on (edge-1k) vs nginx (nginx-1k) req/s", ">= 0.9x"},
		{"GET of a 1 KiB answer (edge-1k), proxy CPU per request vs nginx (nginx-1k)", "<= 1.3x"},
		{"POST with a 512 B body, legacy route (edge-post) vs nginx (nginx-post) req/s", ">= 0.8x"},
		{"10 MiB through edge (edge-a) vs through nginx, each direction (transfer, pinned)", ">= 0.95x each"},
		{"GET over TLS, edge vs nginx req/s", ">= 0.8x"},
		{"9,900 held `jobs/request` long polls (the issue's 10,000; 9,900 is the machine's limit)", "held, edge RSS <= 150 MiB with no GC setting, answered, none retried"},
		{"(b) routable token in a header (edge-b) vs (a) req/s", ">= 0.9x"},
		{"(c) token in a JSON body (edge-c) vs (a) req/s", ">= 0.9x"},
		{"(d) verified job JWT (edge-d) vs (a) req/s", ">= 0.9x"},
		{"edge's own HTTP/1.1 engine (edge-a) vs net/http's server (edge-nethttp), req/s and proxy CPU per request", "-"},
	}
	if len(goals) != len(want) {
		t.Fatalf("goals: got %d rows, want %d", len(goals), len(want))
	}
	for i, w := range want {
		if goals[i].Case != w[0] || goals[i].Goal != w[1] || goals[i].Issue != "" {
			t.Errorf("row %d: got %q %q figure %q, want %q %q and no figure", i, goals[i].Case, goals[i].Goal, goals[i].Issue, w[0], w[1])
		}
	}
}

// TestAllGoals: issue 18's table, then issue 26's, each row naming its issue, split back into
// the two tables.
func TestAllGoals(t *testing.T) {
	all := AllGoals(GoalInput{Load: goal26Load(), Connections: 64})
	groups := GoalGroups(all)
	if len(all) != goalRows+goal26Rows || len(groups) != 2 || len(groups[0]) != goalRows || len(groups[1]) != goal26Rows {
		t.Fatalf("got %d rows in %d groups, want %d and %d", len(all), len(groups), goalRows, goal26Rows)
	}
	for i, issue := range []int{Issue18, Issue26} {
		for _, g := range groups[i] {
			if g.Group != issue {
				t.Errorf("%q: issue %d, want %d", g.Case, g.Group, issue)
			}
		}
	}
	if got := GoalGroups(nil); len(got) != 0 {
		t.Errorf("groups of nothing: got %v", got)
	}
}
