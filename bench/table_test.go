package bench

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func run(id string, round int, proxy bool, rps float64, requests int64, p50, p99, proxyCPU, upCPU time.Duration) Run {
	return Run{
		Case: id, Round: round, HasProxy: proxy, ProxyCPU: proxyCPU, UpstreamCPU: upCPU,
		Wrk: WrkResult{Requests: requests, RequestsPerS: rps, Percentiles: map[int]time.Duration{50: p50, 99: p99}},
	}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	runs := []Run{
		run("direct", 1, false, 100000, 1000000, ms, 2*ms, 0, 5*time.Second),
		run("direct", 2, false, 90000, 900000, 2*ms, 3*ms, 0, 5*time.Second),
		run("direct", 3, false, 110000, 1100000, 3*ms, 9*ms, 0, 5*time.Second),
		run("nginx", 1, true, 50000, 500000, 2*ms, 4*ms, 5*time.Second, 2*time.Second),
		run("nginx", 2, true, 40000, 400000, 2*ms, 4*ms, 4*time.Second, 2*time.Second),
		run("nginx", 3, true, 60000, 600000, 2*ms, 4*ms, 9*time.Second, 2*time.Second),
	}
	runs[4].Wrk.Non2xx3xx = 3
	runs[5].Wrk.SocketErrors = 1
	rows := Summarize([]string{"direct", "nginx", "missing"}, map[string]string{"direct": "direct (limit)"}, runs)
	if len(rows) != 2 {
		t.Fatalf("rows: got %d, want 2", len(rows))
	}
	d, n := rows[0], rows[1]
	if d.Label != "direct (limit)" || n.Label != "nginx" {
		t.Errorf("labels: got %q %q, want %q %q", d.Label, n.Label, "direct (limit)", "nginx")
	}
	if want := 0.2; d.RPSSpread != want {
		t.Errorf("direct spread: got %v, want %v", d.RPSSpread, want)
	}
	if d.RPS != 100000 || d.P50 != 2*ms || d.P99 != 3*ms || d.Rounds != 3 {
		t.Errorf("direct row: got %+v", d)
	}
	if got, want := n.RoundRPS, map[int]float64{1: 50000, 2: 40000, 3: 60000}; !maps.Equal(got, want) {
		t.Errorf("nginx req/s by round: got %v, want %v", got, want)
	}
	// Per-request CPU is the median of each run's CPU/requests: 10us, 10us, 15us.
	if want := 10 * time.Microsecond; n.ProxyCPUPerRequest != want {
		t.Errorf("nginx proxy cpu/req: got %v, want %v", n.ProxyCPUPerRequest, want)
	}
	if want := 4 * time.Microsecond; n.UpstreamCPUPerRequest != want {
		t.Errorf("nginx upstream cpu/req: got %v, want %v", n.UpstreamCPUPerRequest, want)
	}
	if n.Errors != 4 || d.Errors != 0 {
		t.Errorf("errors: got nginx %d direct %d, want 4 and 0", n.Errors, d.Errors)
	}
}

func TestCells(t *testing.T) {
	us := time.Microsecond
	rows := []Row{
		{Case: "direct", Label: "direct", RPS: 100000, P50: 500 * us, P99: 2000 * us, UpstreamCPUPerRequest: 5 * us},
		{Case: "nginx", Label: "nginx", RPS: 50000, P50: 1000 * us, P99: 4000 * us, HasProxy: true, ProxyCPUPerRequest: 10 * us, UpstreamCPUPerRequest: 5 * us},
		{Case: "edge-b", Label: "edge b", RPS: 40000, RPSSpread: 0.15, P50: 1200 * us, P99: 5000 * us, HasProxy: true, ProxyCPUPerRequest: 15 * us, UpstreamCPUPerRequest: 5 * us, Errors: 2},
	}
	cells := Cells(rows)
	want := [][]string{
		{"case", "req/s", "spread", "p50", "p99", "proxy cpu/req", "upstream cpu/req", "req/s vs nginx", "req/s vs direct", "p99 vs nginx", "cpu/req vs nginx", "errors"},
		{"direct", "100000", "0%", "500.0us", "2.00ms", "-", "5.00us", "2.00x", "-", "0.50x", "-", "0"},
		{"nginx", "50000", "0%", "1.00ms", "4.00ms", "10.0us", "5.00us", "-", "0.50x", "-", "-", "0"},
		{"edge b", "40000", "15%", "1.20ms", "5.00ms", "15.0us", "5.00us", "0.80x", "0.40x", "1.25x", "1.50x", "2"},
	}
	if len(cells) != len(want) {
		t.Fatalf("rows: got %d, want %d", len(cells), len(want))
	}
	for i := range want {
		if got, w := strings.Join(cells[i], "|"), strings.Join(want[i], "|"); got != w {
			t.Errorf("row %d: got %s, want %s", i, got, w)
		}
	}
}

func TestCellsWithoutBaselines(t *testing.T) {
	cells := Cells([]Row{{Case: "edge-a", Label: "a", RPS: 1, HasProxy: true}})
	for _, col := range []int{7, 8, 9, 10} {
		if got := cells[1][col]; got != "-" {
			t.Errorf("column %s: got %q, want -", cells[0][col], got)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	if err := WriteTable(&b, [][]string{{"case", "req/s"}, {"nginx", "5"}, {"x", "12345"}}); err != nil {
		t.Fatal(err)
	}
	want := "case   req/s\nnginx      5\nx      12345\n"
	if got := b.String(); got != want {
		t.Errorf("table:\ngot\n%s\nwant\n%s", got, want)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{4567 * time.Nanosecond, "4.57us"},
		{45670 * time.Nanosecond, "45.7us"},
		{1234567 * time.Nanosecond, "1.23ms"},
		{1500 * time.Millisecond, "1.50s"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%v): got %q, want %q", tt.in, got, tt.want)
		}
	}
}
