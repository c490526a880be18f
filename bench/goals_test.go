package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// goalLoad is a run where every load goal is met but one: edge-c is slower than 0.95x of edge-a.
func goalLoad() []Row {
	ms := time.Millisecond
	return []Row{
		{Case: "direct", RPS: 40000, P99: 2 * ms},
		{Case: "nginx", RPS: 25000, P99: 3 * ms},
		{Case: "edge-a", RPS: 20000, P99: 3500 * time.Microsecond},
		{Case: "edge-b", RPS: 19500},
		{Case: "edge-c", RPS: 18000},
		{Case: "edge-d", RPS: 19000},
		{Case: "tunnel", RPS: 15000},
		{Case: "tunnel-hop", RPS: 9000},
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

func TestGoals(t *testing.T) {
	full := GoalInput{Load: goalLoad(), Transfers: goalTransfers(), Connections: 64, Pinned: true}
	tests := []struct {
		name  string
		in    GoalInput
		row   int // index in the table
		today string
		met   bool
		run   bool
	}{
		{"a vs nginx", full, 0, "0.80x (edge-a 20000 req/s, nginx 25000)", true, true},
		{"b vs a", full, 1, "0.97x (edge-b 19500 req/s, edge-a 20000)", true, true},
		{"c vs a: not met", full, 2, "0.90x (edge-c 18000 req/s, edge-a 20000)", false, true},
		{"d vs a: exactly the goal", full, 3, "0.95x (edge-d 19000 req/s, edge-a 20000)", true, true},
		{"added p99", full, 4, "+1.50ms (edge-a 3.50ms, direct 2.00ms)", true, true},
		{"tunnel vs a", full, 5, "0.75x (tunnel 15000 req/s, edge-a 20000)", true, true},
		{"hop vs a, not vs tunnel", full, 6, "0.45x (tunnel-hop 9000 req/s, edge-a 20000)", false, true},
		{"transfer, both directions", full, 7, "download 0.40x (800 of 2000 MB/s), upload 0.40x (600 of 1500 MB/s)", true, true},
		{"long polls not run", full, 8, "not run (bench/cmd/longpollsoak)", false, false},
		{
			"other connections: shown, not met",
			GoalInput{Load: goalLoad(), Connections: 50}, 0,
			"0.80x (edge-a 20000 req/s, nginx 25000) at 50 connections, not 64", false, true,
		},
		{
			"added p99 over the goal",
			GoalInput{Connections: 64, Load: []Row{{Case: "direct", P99: time.Millisecond}, {Case: "edge-a", P99: 3100 * time.Microsecond}}}, 4,
			"+2.10ms (edge-a 3.10ms, direct 1.00ms)", false, true,
		},
		{"nginx not run", GoalInput{Load: goalLoad()[2:], Connections: 64}, 0, "not run (needs cases edge-a and nginx)", false, false},
		{"no transfers", GoalInput{Connections: 64}, 7, "not run (needs case transfer)", false, false},
		{
			"transfer unpinned",
			GoalInput{Transfers: goalTransfers()[:2], Connections: 64}, 7,
			"download 0.40x (800 of 2000 MB/s), not pinned", false, true,
		},
		{
			"transfer upload under the goal",
			GoalInput{Transfers: append(goalTransfers()[:3], TransferRow{Path: "tunnel", Direction: Upload, MBps: 300}), Pinned: true}, 7,
			"download 0.40x (800 of 2000 MB/s), upload 0.20x (300 of 1500 MB/s)", false, true,
		},
		{
			"long polls held",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 10000, PollsHeld: 10000, EdgeRSSMaxMiB: 212.4, Answered: 10000, Answered204: 10000}}, 8,
			"10000 of 10000 held, RSS 212 MiB, 10000 answered 204, 0 retried", true, true,
		},
		{
			"long polls limited",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 10000, PollsHeld: 9000, LimitedBy: "RLIMIT_NOFILE hard 20000", EdgeRSSMaxMiB: 123, Answered: 9000, Answered204: 9000}}, 8,
			"9000 of 10000 held (RLIMIT_NOFILE hard 20000), RSS 123 MiB, 9000 answered 204, 0 retried", false, true,
		},
		{
			"long polls retried",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 10000, PollsHeld: 10000, EdgeRSSMaxMiB: 200, Answered: 10000, Answered204: 9990, Retried: 3, Edge5xx: 2, Errors: 1}}, 8,
			"10000 of 10000 held, RSS 200 MiB, 10000 answered (9990 with 204), 3 retried, 2 edge 5xx, 1 errors", false, true,
		},
		{
			"long polls too big",
			GoalInput{LongPoll: &LongPoll{PollsRequested: 10000, PollsHeld: 10000, EdgeRSSMaxMiB: 301, Answered: 10000, Answered204: 10000}}, 8,
			"10000 of 10000 held, RSS 301 MiB, 10000 answered 204, 0 retried", false, true,
		},
		{"long polls unreadable", GoalInput{LongPollErr: errors.New("longpoll.json: bad")}, 8, "unreadable result: longpoll.json: bad", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goals := Goals(tt.in)
			if len(goals) != 9 {
				t.Fatalf("goals: got %d rows, want 9", len(goals))
			}
			g := goals[tt.row]
			if g.Today != tt.today || g.Met != tt.met || g.Measured != tt.run {
				t.Errorf("row %d %q:\ngot  %q met %v measured %v\nwant %q met %v measured %v",
					tt.row, g.Case, g.Today, g.Met, g.Measured, tt.today, tt.met, tt.run)
			}
		})
	}
}

func TestGoalsText(t *testing.T) {
	goals := Goals(GoalInput{})
	want := [][2]string{
		{"(a) plain GET, legacy route (edge-a) vs nginx req/s", ">= 0.6x"},
		{"(b) routable token in a header (edge-b) vs (a) req/s", ">= 0.95x"},
		{"(c) token in a JSON body (edge-c) vs (a) req/s", ">= 0.95x"},
		{"(d) verified job JWT (edge-d) vs (a) req/s", ">= 0.95x"},
		{"added p99 latency over direct at 64 connections (edge-a p99 minus direct p99)", "<= 2 ms"},
		{"tunnel request (edge > agent) vs (a) req/s", ">= 0.75x"},
		{"edge-to-edge hop (edge2 > edge > agent) vs (a) req/s", ">= 0.5x"},
		{"10 MiB through a tunnel vs direct loopback (transfer, tunnel path, pinned)", ">= 0.35x"},
		{"10,000 held `jobs/request` long polls", "held, edge RSS <= 300 MiB, answered, none retried"},
	}
	for i, w := range want {
		if goals[i].Case != w[0] || goals[i].Goal != w[1] {
			t.Errorf("row %d: got %q %q, want %q %q", i, goals[i].Case, goals[i].Goal, w[0], w[1])
		}
	}
}

func TestGoalsMarkdown(t *testing.T) {
	got := GoalsMarkdown([]Goal{
		{Case: "a", Goal: ">= 1x", Today: "1.2x", Met: true, Measured: true},
		{Case: "b|c", Goal: "<= 2 ms", Today: "+3ms", Measured: true},
		{Case: "d", Goal: ">= 1x", Today: "not run (x)"},
	})
	want := "| case | goal | today | met |\n|---|---|---|---|\n" +
		"| a | >= 1x | 1.2x | yes |\n" +
		"| b\\|c | <= 2 ms | +3ms | no |\n" +
		"| d | >= 1x | not run (x) | - |\n"
	if got != want {
		t.Errorf("markdown:\ngot\n%s\nwant\n%s", got, want)
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
