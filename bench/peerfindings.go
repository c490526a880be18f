package bench

import (
	"fmt"
	"strings"
	"time"
)

// Case IDs of the peers beside nginx: the same plain reverse proxy in HAProxy and Caddy (and
// CasePlain, a tuned httputil.ReverseProxy), and CaseFloor, the least a Go proxy does for the
// request (bench/cmd/floorproxy: no net/http), which shows what Go and the kernel cost apart
// from an HTTP library.
const (
	CaseHAProxy = "haproxy"
	CaseCaddy   = "caddy"
	CaseFloor   = "floor"
)

// Peers are the other proxies edge is compared with, nginx (the table's baseline) first.
func Peers() []string { return []string{CaseNginx, CaseHAProxy, CaseCaddy, CasePlain, CaseFloor} }

// PeerFindings are the peers' numbers in words: each peer against nginx, then edge-a (edge's
// plain proxy) against every peer that ran, req/s with the goal against nginx, and CPU
// per request and p99, which say whether a gap is edge's cost or the machine's noise.
func PeerFindings(load []Row) []string {
	var out []string
	nginx := rowByCase(load, CaseNginx)
	for _, id := range Peers()[1:] {
		r := rowByCase(load, id)
		if r == nil || nginx == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %.0f req/s, %s nginx's %.0f; p99 %s, %s nginx's; cpu/req %s, %s nginx's",
			id, r.RPS, ratioText(r.RPS, nginx.RPS), nginx.RPS,
			FormatDuration(r.P99), ratioText(float64(r.P99), float64(nginx.P99)),
			FormatDuration(r.ProxyCPUPerRequest), ratioText(float64(r.ProxyCPUPerRequest), float64(nginx.ProxyCPUPerRequest))))
	}
	a := rowByCase(load, CaseEdgeA)
	if a == nil {
		return out
	}
	var rps, cpu, p99 []string
	for _, id := range Peers() {
		p := rowByCase(load, id)
		if p == nil {
			continue
		}
		r := fmt.Sprintf("%s %s's %.0f", ratioText(a.RPS, p.RPS), id, p.RPS)
		if v, ok := Ratio(a.RPS, p.RPS); ok && id == CaseNginx {
			r += fmt.Sprintf(" (goal >= %gx: %s)", GoalEdgeAVsNginx, metText(v >= GoalEdgeAVsNginx))
		}
		rps = append(rps, r)
		cpu = append(cpu, durationRatio(a.ProxyCPUPerRequest, p.ProxyCPUPerRequest, id))
		p99 = append(p99, durationRatio(a.P99, p.P99, id))
	}
	if len(rps) == 0 {
		return out
	}
	return append(out,
		fmt.Sprintf("edge-a vs the peers, req/s: %.0f, %s", a.RPS, strings.Join(rps, ", ")),
		fmt.Sprintf("edge-a vs the peers, cpu/req: %s, %s; p99: %s, %s",
			FormatDuration(a.ProxyCPUPerRequest), strings.Join(cpu, ", "), FormatDuration(a.P99), strings.Join(p99, ", ")))
}

func durationRatio(a, b time.Duration, id string) string {
	return fmt.Sprintf("%s %s's %s", ratioText(float64(a), float64(b)), id, FormatDuration(b))
}

func metText(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}

// PostFindings is the 512 B POST on the legacy route in words: edge against the plain httputil
// proxy, CPU per request (the goal's measure) with req/s and p99 beside it.
func PostFindings(load []Row) []string {
	e, p := rowByCase(load, CaseEdgePost), rowByCase(load, CasePlainPost)
	if e == nil || p == nil {
		return nil
	}
	cpu := durationRatio(e.ProxyCPUPerRequest, p.ProxyCPUPerRequest, CasePlainPost)
	if v, ok := Ratio(float64(e.ProxyCPUPerRequest), float64(p.ProxyCPUPerRequest)); ok {
		cpu += fmt.Sprintf(" (goal <= %.1fx: %s)", GoalPostCPUVsPlain, metText(v <= GoalPostCPUVsPlain))
	}
	return []string{fmt.Sprintf("POST 512 B, legacy route: edge-post cpu/req %s, %s; req/s %.0f, %s %s's %.0f; p99 %s, %s",
		FormatDuration(e.ProxyCPUPerRequest), cpu, e.RPS, ratioText(e.RPS, p.RPS), CasePlainPost, p.RPS,
		FormatDuration(e.P99), durationRatio(e.P99, p.P99, CasePlainPost))}
}
