package bench

import "fmt"

// latencyRow is the height of a case's two bars, p50 over p99.
const latencyRow = 30.0

// LatencyChart is each case's median p50 and p99 at the run's connections, in the sections of
// the ratio charts. The scale is linear: the spread of this machine's runs (1 to 30 ms) leaves
// every bar visible, and each bar has its figure written beside it.
func LatencyChart(r ChartRuns) (string, error) {
	med := r.medians()
	type group struct {
		heading string
		ids     []string
	}
	var groups []group
	top, rows := 0.0, 0
	for _, sec := range chartSections {
		g := group{heading: sec.title}
		for _, id := range sec.cases {
			if m, ok := med[id]; ok && m.p99 > 0 {
				g.ids = append(g.ids, id)
				top = max(top, m.p99*1000)
			}
		}
		if len(g.ids) > 0 {
			groups = append(groups, g)
			rows += len(g.ids)
		}
	}
	if len(groups) == 0 {
		return "", ErrNoChartData
	}
	bottom := chartTop + float64(len(groups))*(chartRow+6) + float64(rows)*latencyRow + 4
	a := newAxis(top, chartPlotLeft, chartPlotRight)
	title := fmt.Sprintf("Latency at %d connections: p50 and p99 per case (lower is better)", r.Connections)

	var s svg
	s.open(bottom+46, title)
	chartHeading(&s, title, r.setting())
	legend(&s, []legendItem{{colorP50, "p50 (median latency)"}, {colorP99, "p99"}})
	s.xAxis(a, bottom, "", "milliseconds: wrk's p50 and p99, each the median over the rounds")
	y := chartTop
	for _, g := range groups {
		s.text(10, y+14, textStyle{bold: true}, g.heading)
		y += chartRow + 6
		s.gridLines(a, y, y+float64(len(g.ids))*latencyRow)
		for _, id := range g.ids {
			m := med[id]
			s.text(chartLabelRight, y+19, textStyle{anchor: "end"}, chartLabel(id))
			for i, q := range []struct {
				class, color string
				ms           float64
			}{{"p50", colorP50, m.p50 * 1000}, {"p99", colorP99, m.p99 * 1000}} {
				top := y + 3 + float64(i)*12
				end := a.x(q.ms)
				s.bar(chartPlotLeft, top, end-chartPlotLeft, 11, q.color, q.class, id)
				s.text(end+5, top+9.5, textStyle{size: 10, class: q.class + "-value", data: id, halo: true}, fmt.Sprintf("%s %.2f ms", q.class, q.ms))
			}
			y += latencyRow
		}
	}
	return s.close(), nil
}
