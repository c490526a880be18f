package bench

import "fmt"

// HeldPollsChart is the long-poll soak's one run: edge's memory before the polls and while
// they were held, beside issue 26's bound on the RSS. Figures the soak did not write get no bar.
func HeldPollsChart(lp ChartLongPoll) (string, error) {
	type bar struct {
		id, label string
		mib       *float64
	}
	var bars []bar
	for _, b := range []bar{
		{"rss-before", "RSS before the polls", lp.EdgeRSSBeforeMiB},
		{"rss-max", "RSS max, polls held", lp.EdgeRSSMaxMiB},
		{"heap-held", "Go heap in use, held", lp.EdgeHeapInuseHeldMiB},
	} {
		if b.mib != nil {
			bars = append(bars, b)
		}
	}
	if len(bars) == 0 {
		return "", ErrNoChartData
	}
	top := float64(Goal26LongPollRSSMiB)
	for _, b := range bars {
		top = max(top, *b.mib)
	}
	const rowsTop = chartTop + 8
	bottom := rowsTop + float64(len(bars))*(chartRow+8) + 4
	a := newAxis(top, chartPlotLeft, chartPlotRight)

	title := fmt.Sprintf("Long polls held at once against edge's memory: %d of %d held", lp.PollsHeld, lp.PollsRequested)
	sub := fmt.Sprintf("longpollsoak: polls opened at %.0f/s, held %.0f s; %d answered (%d with 204), %d retried",
		lp.PollRate, lp.HoldSeconds, lp.Answered, lp.Answered204, lp.Retried)
	if lp.LimitedBy != "" {
		sub += "; limited by " + lp.LimitedBy
	}
	var s svg
	s.open(bottom+46, title)
	chartHeading(&s, title, sub)
	if lp.EdgeRSSBeforeMiB != nil && lp.EdgeRSSMaxMiB != nil && lp.PollsHeld > 0 {
		perPoll := (*lp.EdgeRSSMaxMiB - *lp.EdgeRSSBeforeMiB) * 1024 / float64(lp.PollsHeld)
		s.text(10, 58, textStyle{size: 11, fill: colorMuted},
			fmt.Sprintf("RSS per held poll: %.1f KiB ((max - before) / held)", perPoll))
	}
	s.gridLines(a, rowsTop, bottom)
	s.xAxis(a, bottom, "", "MiB")
	goal := a.x(Goal26LongPollRSSMiB)
	s.line(goal, rowsTop-6, goal, bottom, colorGoal, true)
	s.text(goal, rowsTop-9, textStyle{anchor: "middle", size: 11, fill: colorGoal},
		fmt.Sprintf("issue 26's goal: RSS max <= %d MiB", Goal26LongPollRSSMiB))
	y := rowsTop
	for _, b := range bars {
		s.text(chartLabelRight, y+17, textStyle{anchor: "end"}, b.label)
		end := a.x(*b.mib)
		color := colorPeer
		if b.id == "rss-max" {
			color = colorEdge
		}
		s.bar(chartPlotLeft, y+4, end-chartPlotLeft, 18, color, "bar", b.id)
		s.text(end+5, y+17, textStyle{class: "value", data: b.id, halo: true}, fmt.Sprintf("%.1f MiB", *b.mib))
		y += chartRow + 8
	}
	return s.close(), nil
}
