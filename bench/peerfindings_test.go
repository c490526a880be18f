package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPeerFindings(t *testing.T) {
	us := time.Microsecond
	load := []Row{
		{Case: "direct", RPS: 40000, P99: 1000 * us},
		{Case: "nginx", RPS: 25000, P99: 2000 * us, ProxyCPUPerRequest: 20 * us, HasProxy: true},
		{Case: "haproxy", RPS: 27500, P99: 1800 * us, ProxyCPUPerRequest: 18 * us, HasProxy: true},
		{Case: "caddy", RPS: 16000, P99: 5000 * us, ProxyCPUPerRequest: 40 * us, HasProxy: true},
		{Case: "edge-a", RPS: 20000, P99: 3000 * us, ProxyCPUPerRequest: 30 * us, HasProxy: true},
	}
	tests := []struct {
		name string
		load []Row
		want []string
	}{
		{"every peer", load, []string{
			"haproxy: 27500 req/s, 1.10x nginx's 25000; p99 1.80ms, 0.90x nginx's; cpu/req 18.0us, 0.90x nginx's",
			"caddy: 16000 req/s, 0.64x nginx's 25000; p99 5.00ms, 2.50x nginx's; cpu/req 40.0us, 2.00x nginx's",
			"edge-a vs the peers, req/s: 20000, 0.80x nginx's 25000 (goal >= 0.6x: met), 0.73x haproxy's 27500, 1.25x caddy's 16000",
			"edge-a vs the peers, cpu/req: 30.0us, 1.50x nginx's 20.0us, 1.67x haproxy's 18.0us, 0.75x caddy's 40.0us; " +
				"p99: 3.00ms, 1.50x nginx's 2.00ms, 1.67x haproxy's 1.80ms, 0.60x caddy's 5.00ms",
		}},
		{"without nginx: no peer against nginx", []Row{load[2], load[4]}, []string{
			"edge-a vs the peers, req/s: 20000, 0.73x haproxy's 27500",
			"edge-a vs the peers, cpu/req: 30.0us, 1.67x haproxy's 18.0us; p99: 3.00ms, 1.67x haproxy's 1.80ms",
		}},
		{"edge-a under the goal", []Row{load[1], {Case: "edge-a", RPS: 10000, P99: 3000 * us, ProxyCPUPerRequest: 30 * us}}, []string{
			"edge-a vs the peers, req/s: 10000, 0.40x nginx's 25000 (goal >= 0.6x: NOT met)",
			"edge-a vs the peers, cpu/req: 30.0us, 1.50x nginx's 20.0us; p99: 3.00ms, 1.50x nginx's 2.00ms",
		}},
		{"no edge-a, no peers", load[:1], nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PeerFindings(tt.load)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestPeerFindingsPlain: the plain httputil proxy is a peer like the others.
func TestPeerFindingsPlain(t *testing.T) {
	us := time.Microsecond
	got := PeerFindings([]Row{
		{Case: "nginx", RPS: 25000, P99: 2000 * us, ProxyCPUPerRequest: 20 * us, HasProxy: true},
		{Case: "plain", RPS: 22000, P99: 2500 * us, ProxyCPUPerRequest: 25 * us, HasProxy: true},
		{Case: "edge-a", RPS: 20000, P99: 3000 * us, ProxyCPUPerRequest: 30 * us, HasProxy: true},
	})
	want := []string{
		"plain: 22000 req/s, 0.88x nginx's 25000; p99 2.50ms, 1.25x nginx's; cpu/req 25.0us, 1.25x nginx's",
		"edge-a vs the peers, req/s: 20000, 0.80x nginx's 25000 (goal >= 0.6x: met), 0.91x plain's 22000",
		"edge-a vs the peers, cpu/req: 30.0us, 1.50x nginx's 20.0us, 1.20x plain's 25.0us; p99: 3.00ms, 1.50x nginx's 2.00ms, 1.20x plain's 2.50ms",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPostFindings(t *testing.T) {
	us := time.Microsecond
	plain := Row{Case: "plain-post", RPS: 15000, P99: 4000 * us, ProxyCPUPerRequest: 40 * us, HasProxy: true}
	tests := []struct {
		name string
		edge Row
		want string
	}{
		{"over the goal", Row{Case: "edge-post", RPS: 12000, P99: 5000 * us, ProxyCPUPerRequest: 48 * us, HasProxy: true},
			"POST 512 B, legacy route: edge-post cpu/req 48.0us, 1.20x plain-post's 40.0us (goal <= 1.0x: NOT met); req/s 12000, 0.80x plain-post's 15000; p99 5.00ms, 1.25x plain-post's 4.00ms"},
		{"met", Row{Case: "edge-post", RPS: 16000, P99: 3000 * us, ProxyCPUPerRequest: 36 * us, HasProxy: true},
			"POST 512 B, legacy route: edge-post cpu/req 36.0us, 0.90x plain-post's 40.0us (goal <= 1.0x: met); req/s 16000, 1.07x plain-post's 15000; p99 3.00ms, 0.75x plain-post's 4.00ms"},
	}
	for _, tt := range tests {
		got := PostFindings([]Row{plain, tt.edge})
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.name, got, tt.want)
		}
	}
	if got := PostFindings([]Row{plain}); got != nil {
		t.Errorf("without edge-post: got %q", got)
	}
}
