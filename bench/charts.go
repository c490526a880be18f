package bench

import (
	"fmt"
	"strings"
	"time"
)

// The bar charts' layout: case labels right-aligned up to chartLabelRight, bars from
// chartPlotLeft to at most chartPlotRight, the value text after a bar's end in what is left of
// ChartWidth.
const (
	chartLabelRight = 160.0
	chartPlotLeft   = 170.0
	chartPlotRight  = 540.0
	chartTop        = 76.0 // under the title, the subtitle and the legend
	chartRow        = 20.0
)

const (
	colorBase  = "#4a4a4a"
	colorEdge  = "#2b6cb0"
	colorPeer  = "#a9b4c2"
	colorGoal  = "#c0392b"
	colorP50   = "#7fb3e0"
	colorP99   = "#2b6cb0"
	colorMuted = "#555555"
)

// ratioSpec is what a ratio chart measures of a case's medians and how it prints one.
type ratioSpec struct {
	title, axisTitle string
	measure          func(chartMedian) float64 // <= 0: no figure, no bar
	value            func(chartMedian) string
}

type ratioBar struct {
	id    string
	ratio float64
	text  string
}

type ratioGroup struct {
	heading, base string
	bars          []ratioBar
}

// ReqPerSecondChart is each case's median req/s as a multiple of its section's nginx case.
func ReqPerSecondChart(r ChartRuns) (string, error) {
	return ratioChart(r, ratioSpec{
		title:     "Requests per second against nginx (higher is better)",
		axisTitle: "median req/s over the rounds, as a multiple of the section's nginx case",
		measure:   func(m chartMedian) float64 { return m.rps },
		value:     func(m chartMedian) string { return fmt.Sprintf("%.0f req/s", m.rps) },
	})
}

// CPUPerRequestChart is each proxy's median CPU per request as a multiple of its section's
// nginx case; direct has no proxy and so no bar.
func CPUPerRequestChart(r ChartRuns) (string, error) {
	return ratioChart(r, ratioSpec{
		title:     "Proxy CPU per request against nginx (lower is better)",
		axisTitle: "median of (proxy utime+stime / requests) over the rounds, as a multiple of the section's nginx",
		measure:   func(m chartMedian) float64 { return m.cpuPerR },
		value:     func(m chartMedian) string { return FormatDuration(seconds(m.cpuPerR)) + "/req" },
	})
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// ratioGroups are the sections whose baseline ran with a figure, each with its cases that did.
func ratioGroups(med map[string]chartMedian, spec ratioSpec) (groups []ratioGroup, skipped []string) {
	for _, sec := range chartSections {
		base, ok := med[sec.base]
		if !ok || spec.measure(base) <= 0 {
			continue
		}
		g := ratioGroup{heading: sec.title + ", against " + sec.base, base: sec.base}
		for _, id := range sec.cases {
			m, ok := med[id]
			if !ok {
				continue
			}
			v := spec.measure(m)
			if v <= 0 {
				skipped = append(skipped, chartLabel(id))
				continue
			}
			g.bars = append(g.bars, ratioBar{id: id, ratio: v / spec.measure(base), text: spec.value(m)})
		}
		groups = append(groups, g)
	}
	return groups, skipped
}

func ratioChart(r ChartRuns, spec ratioSpec) (string, error) {
	groups, skipped := ratioGroups(r.medians(), spec)
	if len(groups) == 0 {
		return "", ErrNoChartData
	}
	top := 1.0
	rows := 0
	for _, g := range groups {
		rows += len(g.bars)
		for _, b := range g.bars {
			top = max(top, b.ratio)
		}
	}
	bottom := chartTop + float64(len(groups))*(chartRow+6) + float64(rows)*chartRow + 4
	height := bottom + 46
	if len(skipped) > 0 {
		height += 16
	}
	a := newAxis(top, chartPlotLeft, chartPlotRight)

	var s svg
	s.open(height, spec.title)
	chartHeading(&s, spec.title, r.setting())
	legend(&s, []legendItem{
		{colorBase, "the section's nginx (1.00x, dashed line)"}, {colorPeer, "the others"}, {colorEdge, "edge"},
	})
	s.xAxis(a, bottom, "x", spec.axisTitle)
	y := chartTop
	for _, g := range groups {
		s.text(10, y+14, textStyle{bold: true}, g.heading)
		y += chartRow + 6
		end := y + float64(len(g.bars))*chartRow
		s.gridLines(a, y, end)
		s.line(a.x(1), y, a.x(1), end, colorBase, true)
		for _, b := range g.bars {
			s.text(chartLabelRight, y+14, textStyle{anchor: "end"}, chartLabel(b.id))
			barEnd := a.x(b.ratio)
			s.bar(chartPlotLeft, y+3, barEnd-chartPlotLeft, 14, barColor(b.id, b.id == g.base), "bar", b.id)
			s.text(barEnd+5, y+14, textStyle{size: 11, class: "value", data: b.id, halo: true}, fmt.Sprintf("%.2fx (%s)", b.ratio, b.text))
			y += chartRow
		}
	}
	if len(skipped) > 0 {
		s.text(10, bottom+54, textStyle{size: 11, fill: colorMuted},
			"No bar, no figure: "+strings.Join(skipped, ", "))
	}
	return s.close(), nil
}

func barColor(id string, base bool) string {
	switch {
	case base:
		return colorBase
	case strings.HasPrefix(id, "edge"):
		return colorEdge
	}
	return colorPeer
}

// chartHeading is a chart's title and the line under it saying what was measured.
func chartHeading(s *svg, title, subtitle string) {
	s.text(10, 22, textStyle{size: 15, bold: true}, title)
	s.text(10, 40, textStyle{size: 11, fill: colorMuted}, subtitle)
}

type legendItem struct{ color, text string }

// legend is one line of colored squares with their meaning, under the subtitle.
func legend(s *svg, items []legendItem) {
	x := 10.0
	for _, it := range items {
		s.bar(x, 50, 10, 10, it.color, "", "")
		s.text(x+14, 59, textStyle{size: 11}, it.text)
		x += 14 + 6.2*float64(len(it.text)) + 18 // about 6.2 px a character at 11 px
	}
}
