package bench

import (
	"strings"
	"testing"
	"time"
)

func TestSummarizeParts(t *testing.T) {
	us := time.Microsecond
	runs := []Run{
		{Case: "tunnel", Round: 1, HasProxy: true, ProxyCPU: 30 * time.Millisecond, Wrk: WrkResult{Requests: 1000},
			Parts: map[string]time.Duration{PartEdge: 20 * time.Millisecond, PartAgent: 10 * time.Millisecond}},
		{Case: "tunnel", Round: 2, HasProxy: true, ProxyCPU: 60 * time.Millisecond, Wrk: WrkResult{Requests: 1000},
			Parts: map[string]time.Duration{PartEdge: 40 * time.Millisecond, PartAgent: 20 * time.Millisecond}},
		{Case: "tunnel", Round: 3, HasProxy: true, ProxyCPU: 45 * time.Millisecond, Wrk: WrkResult{Requests: 1000},
			Parts: map[string]time.Duration{PartEdge: 30 * time.Millisecond, PartAgent: 15 * time.Millisecond}},
		{Case: "edge-a", Round: 1, HasProxy: true, ProxyCPU: 10 * time.Millisecond, Wrk: WrkResult{Requests: 1000}},
	}
	rows := Summarize([]string{"tunnel", "edge-a"}, nil, runs)
	if got, want := rows[0].PartsPerRequest[PartEdge], 30*us; got != want {
		t.Errorf("tunnel edge cpu/req: got %v, want %v", got, want)
	}
	if got, want := rows[0].PartsPerRequest[PartAgent], 15*us; got != want {
		t.Errorf("tunnel agent cpu/req: got %v, want %v", got, want)
	}
	if rows[1].PartsPerRequest != nil {
		t.Errorf("edge-a parts: got %v, want none", rows[1].PartsPerRequest)
	}
}

func TestTunnelCells(t *testing.T) {
	us := time.Microsecond
	rows := []Row{
		{Case: "direct", Label: "direct", RPS: 40000, P50: 500 * us},
		{Case: "edge-a", Label: "edge a", RPS: 10000, P50: 2000 * us, P99: 4000 * us, HasProxy: true, ProxyCPUPerRequest: 50 * us},
		{Case: "tunnel", Label: "tunnel", RPS: 6000, P50: 3000 * us, P99: 9000 * us, HasProxy: true, ProxyCPUPerRequest: 120 * us,
			PartsPerRequest: map[string]time.Duration{PartEdge: 80 * us, PartAgent: 40 * us}},
		{Case: "tunnel-hop", Label: "hop", RPS: 4000, P50: 4500 * us, P99: 12000 * us, HasProxy: true, ProxyCPUPerRequest: 200 * us,
			PartsPerRequest: map[string]time.Duration{PartEdge: 70 * us, PartEdge2: 80 * us, PartAgent: 40 * us, PartRedis: 10 * us}},
	}
	want := [][]string{
		{"case", "req/s", "p50", "p99", "edge cpu/req", "edge2 cpu/req", "agent cpu/req", "redis cpu/req", "path cpu/req", "req/s vs edge-a", "added p50", "over"},
		{"edge a", "10000", "2.00ms", "4.00ms", "50.0us", "-", "-", "-", "50.0us", "-", "+1.50ms", "direct"},
		{"tunnel", "6000", "3.00ms", "9.00ms", "80.0us", "-", "40.0us", "-", "120.0us", "0.60x", "+1.00ms", "edge-a"},
		{"hop", "4000", "4.50ms", "12.00ms", "70.0us", "80.0us", "40.0us", "10.0us", "200.0us", "0.40x", "+1.50ms", "tunnel"},
	}
	checkCells(t, TunnelCells(rows), want)

	// Without edge-a and direct: no ratio and no reference for the tunnel row.
	got := TunnelCells(rows[2:3])
	if len(got) != 2 || got[1][9] != "-" || got[1][10] != "-" {
		t.Errorf("tunnel alone: got %v", got)
	}
}

func TestLatencyCells(t *testing.T) {
	us := time.Microsecond
	rows := []Row{
		{Case: "edge-a", Label: "edge a", RPS: 5000, P50: 150 * us, P99: 300 * us},
		{Case: "tunnel", Label: "tunnel", RPS: 3000, P50: 300 * us, P99: 500 * us},
		{Case: "tunnel-hop", Label: "hop", RPS: 2000, P50: 450 * us, P99: 450 * us},
	}
	want := [][]string{
		{"case", "req/s", "p50", "p99", "added p50", "added p99", "over"},
		{"edge a", "5000", "150.0us", "300.0us", "-", "-", "-"},
		{"tunnel", "3000", "300.0us", "500.0us", "+150.0us", "+200.0us", "edge-a"},
		{"hop", "2000", "450.0us", "450.0us", "+150.0us", "-50.0us", "tunnel"},
	}
	checkCells(t, LatencyCells(rows), want)
}

func TestTunnelFindings(t *testing.T) {
	us := time.Microsecond
	load := []Row{
		{Case: "edge-a", RPS: 10000},
		{Case: "tunnel", RPS: 4000, P50: 3000 * us},
		{Case: "tunnel-hop", RPS: 3000, P50: 3500 * us},
	}
	latency := []Row{
		{Case: "tunnel", P50: 300 * us, P99: 600 * us},
		{Case: "tunnel-hop", P50: 420 * us, P99: 900 * us},
	}
	transfers := []TransferRow{
		{Path: "direct", Direction: Download, Label: "direct", Bytes: 10 * MiB, MBps: 1000},
		{Path: "nginx", Direction: Download, Label: "nginx", Bytes: 10 * MiB, MBps: 800},
		{Path: "edge-a", Direction: Download, Label: "plain", Bytes: 10 * MiB, MBps: 700},
		{Path: "tunnel", Direction: Download, Label: "tunnel", Bytes: 10 * MiB, MBps: 600},
		{Path: "tunnel-hop", Direction: Download, Label: "hop", Bytes: 10 * MiB, MBps: 400},
		{Path: "tunnel", Direction: Upload, Label: "tunnel", Bytes: 10 * MiB, MBps: 300}, // no direct upload: left out
	}
	got := TunnelFindings(load, latency, transfers)
	want := []string{
		"requests through a tunnel: 4000 req/s, 0.40x the plain proxy's (edge-a) 10000 (goal >= 0.8x: NOT met)",
		"edge-to-edge hop: 3000 req/s, 0.30x edge-a's (goal >= 0.6x: NOT met), 0.75x tunnel's; adds p50 +500.0us at full load, p50 +120.0us and p99 +300.0us at one connection",
		"10 MiB download through nginx: 800 MB/s, 0.80x direct loopback's 1000 MB/s",
		"10 MiB download through plain: 700 MB/s, 0.70x direct loopback's 1000 MB/s",
		"10 MiB download through tunnel: 600 MB/s, 0.60x direct loopback's 1000 MB/s (goal >= 0.4x: met)",
		"10 MiB download through hop: 400 MB/s, 0.40x direct loopback's 1000 MB/s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := TunnelFindings(nil, nil, nil); len(got) != 0 {
		t.Errorf("findings of nothing: got %v", got)
	}
}

func TestFormatDelta(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{150 * time.Microsecond, "+150.0us"},
		{-2500 * time.Microsecond, "-2.50ms"},
		{0, "+0.00us"},
	}
	for _, tt := range tests {
		if got := FormatDelta(tt.in); got != tt.want {
			t.Errorf("FormatDelta(%v): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func checkCells(t *testing.T, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("rows: got %d %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if g, w := strings.Join(got[i], "|"), strings.Join(want[i], "|"); g != w {
			t.Errorf("row %d:\ngot  %s\nwant %s", i, g, w)
		}
	}
}
