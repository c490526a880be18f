package bench

import (
	"fmt"
	"time"
)

// Case IDs of the tunnel part and its baseline.
const (
	CaseEdgeA     = "edge-a"
	CaseTunnel    = "tunnel"
	CaseTunnelHop = "tunnel-hop"
)

// The processes a tunnel case's CPU is split over (the keys of Run.Parts).
const (
	PartEdge  = "edge"  // the edge the agent is connected to (the only edge of `tunnel`)
	PartEdge2 = "edge2" // the entry edge of the hop, which holds no agent
	PartAgent = "agent"
	PartRedis = "redis" // the shared registry, asked by the entry edge
)

// reference is the row a case's added latency is measured over: the path one step shorter.
func reference(id string) string {
	switch id {
	case CaseEdgeA:
		return CaseDirect
	case CaseTunnel:
		return CaseEdgeA
	case CaseTunnelHop:
		return CaseTunnel
	}
	return ""
}

func rowByCase(rows []Row, id string) *Row {
	for i := range rows {
		if rows[i].Case == id {
			return &rows[i]
		}
	}
	return nil
}

// TunnelCells is the tunnel cases' table under load, with edge-a as the plain proxy to compare
// with: CPU per request split by process, req/s against edge-a, and the p50 each case adds to
// the path one step shorter (tunnel over edge-a, tunnel-hop over tunnel).
func TunnelCells(rows []Row) [][]string {
	out := [][]string{{
		"case", "req/s", "p50", "p99", "edge cpu/req", "edge2 cpu/req", "agent cpu/req", "redis cpu/req",
		"path cpu/req", "req/s vs edge-a", "added p50", "over",
	}}
	edgeA := rowByCase(rows, CaseEdgeA)
	for _, id := range []string{CaseEdgeA, CaseTunnel, CaseTunnelHop} {
		r := rowByCase(rows, id)
		if r == nil {
			continue
		}
		part := func(name string) string {
			if d, ok := r.PartsPerRequest[name]; ok {
				return FormatDuration(d)
			}
			if name == PartEdge && r.HasProxy && len(r.PartsPerRequest) == 0 {
				return FormatDuration(r.ProxyCPUPerRequest) // edge-a: the edge is the whole path
			}
			return "-"
		}
		added, over := addedCells(rows, *r, func(x Row) time.Duration { return x.P50 })
		out = append(out, []string{
			r.Label, fmt.Sprintf("%.0f", r.RPS), FormatDuration(r.P50), FormatDuration(r.P99),
			part(PartEdge), part(PartEdge2), part(PartAgent), part(PartRedis),
			FormatDuration(r.ProxyCPUPerRequest),
			ratioCell(*r, edgeA, func(x Row) float64 { return x.RPS }),
			added, over,
		})
	}
	return out
}

// LatencyCells is the low-load table (one connection): each case's latency and what it adds to
// the path one step shorter.
func LatencyCells(rows []Row) [][]string {
	out := [][]string{{"case", "req/s", "p50", "p99", "added p50", "added p99", "over"}}
	for _, r := range rows {
		addedP50, over := addedCells(rows, r, func(x Row) time.Duration { return x.P50 })
		addedP99, _ := addedCells(rows, r, func(x Row) time.Duration { return x.P99 })
		out = append(out, []string{
			r.Label, fmt.Sprintf("%.0f", r.RPS), FormatDuration(r.P50), FormatDuration(r.P99), addedP50, addedP99, over,
		})
	}
	return out
}

// addedCells is measure(r) minus measure of r's reference row, and that row's case; "-" when
// the reference is not among rows.
func addedCells(rows []Row, r Row, measure func(Row) time.Duration) (string, string) {
	ref := rowByCase(rows, reference(r.Case))
	if ref == nil {
		return "-", "-"
	}
	return FormatDelta(measure(r) - measure(*ref)), ref.Case
}

// FormatDelta is FormatDuration with a sign.
func FormatDelta(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	return "+" + FormatDuration(d)
}

// TunnelFindings are the numbers in words: tunnel and hop req/s against the plain proxy,
// the hop's added latency (under load and at one connection), and the transfer rates against direct
// loopback, each ratio with the goal it is held to. Measures that were not run are left out.
func TunnelFindings(load, latency []Row, transfers []TransferRow) []string {
	var out []string
	a := rowByCase(load, CaseEdgeA)
	if t := rowByCase(load, CaseTunnel); t != nil && a != nil {
		if v, ok := Ratio(t.RPS, a.RPS); ok {
			out = append(out, fmt.Sprintf("requests through a tunnel: %.0f req/s, %.2fx the plain proxy's (edge-a) %.0f (goal >= %gx: %s)",
				t.RPS, v, a.RPS, GoalTunnelVsEdgeA, metText(v >= GoalTunnelVsEdgeA)))
		}
	}
	// The hop's goal is against the plain proxy; against the one-edge tunnel it says what the
	// second edge adds.
	if h, t := rowByCase(load, CaseTunnelHop), rowByCase(load, CaseTunnel); h != nil && t != nil {
		line := fmt.Sprintf("edge-to-edge hop: %.0f req/s", h.RPS)
		if v, ok := Ratio(h.RPS, rpsOf(a)); ok {
			line += fmt.Sprintf(", %.2fx edge-a's (goal >= %gx: %s)", v, GoalHopVsEdgeA, metText(v >= GoalHopVsEdgeA))
		}
		line += fmt.Sprintf(", %s tunnel's; adds p50 %s at full load", ratioText(h.RPS, t.RPS), FormatDelta(h.P50-t.P50))
		if lh, lt := rowByCase(latency, CaseTunnelHop), rowByCase(latency, CaseTunnel); lh != nil && lt != nil {
			line += fmt.Sprintf(", p50 %s and p99 %s at one connection", FormatDelta(lh.P50-lt.P50), FormatDelta(lh.P99-lt.P99))
		}
		out = append(out, line)
	}
	for _, dir := range []string{Download, Upload} {
		direct := transferRow(transfers, CaseDirect, dir)
		if direct == nil {
			continue
		}
		for _, path := range []string{CaseNginx, CaseEdgeA, CaseTunnel, CaseTunnelHop} {
			r := transferRow(transfers, path, dir)
			if r == nil {
				continue
			}
			v, ok := Ratio(r.MBps, direct.MBps)
			if !ok {
				continue
			}
			line := fmt.Sprintf("%s %s through %s: %.0f MB/s, %.2fx direct loopback's %.0f MB/s",
				FormatBytes(r.Bytes), dir, r.Label, r.MBps, v, direct.MBps)
			if path == CaseTunnel {
				line += fmt.Sprintf(" (goal >= %gx: %s)", GoalTransferVsDirect, metText(v >= GoalTransferVsDirect))
			}
			out = append(out, line)
		}
	}
	return out
}

func rpsOf(r *Row) float64 {
	if r == nil {
		return 0
	}
	return r.RPS
}

func ratioText(a, b float64) string {
	v, ok := Ratio(a, b)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}
