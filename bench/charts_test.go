package bench

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chartFixture has three rounds per case with one round far off, so that a mean or a single
// round gives other ratios than the medians: nginx's req/s median is 110, edge-a's 55 (0.50x),
// haproxy's 220 (2.00x); CPU per request (per round, then the median) is nginx 11us, edge-a 22us
// (2.00x; the sums' quotient would be 1.03x). edge-1k has no nginx-1k: no section, no bar.
func chartFixture() ChartRuns {
	type round struct {
		rps      float64
		requests int64
		cpu      float64
	}
	cases := []struct {
		id     string
		rounds []round
	}{
		{CaseDirect, []round{{330, 3300, 0}, {300, 3000, 0}, {340, 3400, 0}}},
		{CaseNginx, []round{{100, 1000, 0.010}, {300, 3000, 0.090}, {110, 1000, 0.011}}},
		{CaseHAProxy, []round{{220, 2200, 0.022}, {200, 2000, 0.020}, {240, 2400, 0.024}}},
		{CaseEdgeA, []round{{55, 1000, 0.022}, {20, 500, 0.005}, {60, 1000, 0.030}}},
		{CaseEdge1K, []round{{50, 500, 0.01}}},
	}
	r := ChartRuns{Time: time.Date(2026, 11, 28, 9, 16, 23, 0, time.UTC), Rounds: 3, Duration: "10s", Connections: 64, Threads: 1, Pinned: true}
	for _, c := range cases {
		for i, rd := range c.rounds {
			r.Runs = append(r.Runs, ChartRun{Case: c.id, Round: i + 1, Requests: rd.requests, RequestsPerSecond: rd.rps,
				P50Seconds: float64(i+1) / 1000, P99Seconds: float64(i+1) * 4 / 1000, ProxyCPUSeconds: rd.cpu})
		}
	}
	return r
}

type svgElem struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG fails the test unless s is well-formed XML with an svg root.
func parseSVG(t *testing.T, s string) []svgElem {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	var out []svgElem
	var open []int
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("not well-formed: %v\n%s", err, s)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			open = append(open, len(out)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tok)
			}
		}
	}
	if len(out) == 0 || out[0].name != "svg" || out[0].attrs["width"] != strconv.Itoa(ChartWidth) {
		t.Fatalf("root is not a %d px svg: %+v", ChartWidth, out[:min(1, len(out))])
	}
	return out
}

// byCase is the elements named name with class class, by data-case; a case twice fails.
func byCase(t *testing.T, elems []svgElem, name, class string) map[string]svgElem {
	t.Helper()
	out := map[string]svgElem{}
	for _, e := range elems {
		if e.name != name || e.attrs["class"] != class {
			continue
		}
		id := e.attrs["data-case"]
		if _, dup := out[id]; dup {
			t.Errorf("two %s.%s for %q", name, class, id)
		}
		out[id] = e
	}
	return out
}

func width(t *testing.T, e svgElem) float64 {
	t.Helper()
	w, err := strconv.ParseFloat(e.attrs["width"], 64)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func checkRatioChart(t *testing.T, s string, want map[string]string) map[string]svgElem {
	t.Helper()
	elems := parseSVG(t, s)
	bars, values := byCase(t, elems, "rect", "bar"), byCase(t, elems, "text", "value")
	if got := slices.Sorted(maps.Keys(bars)); len(got) != len(want) {
		t.Errorf("bars for %v, want one for each of %v", got, want)
	}
	for id, ratio := range want {
		if _, ok := bars[id]; !ok {
			t.Errorf("no bar for %s", id)
		}
		if v := values[id].text; !strings.HasPrefix(v, ratio+" (") {
			t.Errorf("%s's label %q, want %s", id, v, ratio)
		}
	}
	return bars
}

func TestChartReqPerSecond(t *testing.T) {
	s, err := ReqPerSecondChart(chartFixture())
	if err != nil {
		t.Fatal(err)
	}
	bars := checkRatioChart(t, s, map[string]string{CaseDirect: "3.00x", CaseNginx: "1.00x", CaseHAProxy: "2.00x", CaseEdgeA: "0.50x"})
	if n, e := width(t, bars[CaseNginx]), width(t, bars[CaseEdgeA]); math.Abs(e-n/2) > 0.1 {
		t.Errorf("edge-a's bar %v px, nginx's %v: want half", e, n)
	}
	for _, want := range []string{"3 rounds of 10s at 64 connections", "2026-11-28 09:16 UTC", "110 req/s"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in the chart", want)
		}
	}
}

func TestChartCPUPerRequest(t *testing.T) {
	s, err := CPUPerRequestChart(chartFixture())
	if err != nil {
		t.Fatal(err)
	}
	checkRatioChart(t, s, map[string]string{CaseNginx: "1.00x", CaseHAProxy: "0.91x", CaseEdgeA: "2.00x"})
	if !strings.Contains(s, "No bar, no figure: direct") {
		t.Error("direct, which has no proxy, is not named as left out")
	}
}

func TestChartLatency(t *testing.T) {
	s, err := LatencyChart(chartFixture())
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, s)
	p50, p99 := byCase(t, elems, "text", "p50-value"), byCase(t, elems, "text", "p99-value")
	for _, id := range []string{CaseDirect, CaseNginx, CaseHAProxy, CaseEdgeA, CaseEdge1K} {
		if p50[id].text == "" || p99[id].text == "" {
			t.Errorf("%s: p50 %q, p99 %q", id, p50[id].text, p99[id].text)
		}
	}
	if got := p99[CaseNginx].text; got != "p99 8.00 ms" {
		t.Errorf("nginx p99 %q, want the median 8.00 ms", got)
	}
}

func TestChartHeldPolls(t *testing.T) {
	lp, err := ParseChartLongPoll([]byte(`{"polls_requested": 9900, "polls_held": 9900, "hold_s": 60,
		"edge_rss_before_mib": 26.3, "edge_rss_max_mib": 143.4}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := HeldPollsChart(lp)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, s)
	bars, values := byCase(t, elems, "rect", "bar"), byCase(t, elems, "text", "value")
	if len(bars) != 2 || values["rss-max"].text != "143.4 MiB" || values["rss-before"].text != "26.3 MiB" {
		t.Errorf("bars %v, values %v: want RSS before and max only", bars, values)
	}
	for _, want := range []string{"9900 of 9900 held", "12.1 KiB"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in the chart", want)
		}
	}
	if _, err := HeldPollsChart(ChartLongPoll{PollsHeld: 1}); !errors.Is(err, ErrNoChartData) {
		t.Errorf("no memory figures: err %v, want ErrNoChartData", err)
	}
}

// edgebench rotates the case order each round: the runs' order must not change a byte.
func TestChartDeterministic(t *testing.T) {
	a, b := chartFixture(), chartFixture()
	slices.Reverse(b.Runs)
	for _, draw := range []func(ChartRuns) (string, error){ReqPerSecondChart, CPUPerRequestChart, LatencyChart} {
		x, err1 := draw(a)
		y, err2 := draw(b)
		if err1 != nil || err2 != nil || x != y {
			t.Errorf("two drawings of the same runs differ (errors %v, %v)", err1, err2)
		}
	}
}

func TestChartNoBaseline(t *testing.T) {
	r := chartFixture()
	r.Runs = slices.DeleteFunc(r.Runs, func(run ChartRun) bool { return run.Case == CaseNginx })
	if _, err := ReqPerSecondChart(r); !errors.Is(err, ErrNoChartData) {
		t.Errorf("without nginx: err %v, want ErrNoChartData", err)
	}
}

// The charts' medians are edgebench's: the checked-in run's medians array is what Summarize
// wrote from the same runs.
func TestChartMediansMatchEdgebench(t *testing.T) {
	b, err := os.ReadFile("results/issue26-direct/edgebench.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseChartRuns(b)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Medians []struct {
			Case                      string  `json:"case"`
			RPS                       float64 `json:"requests_per_second"`
			P50                       float64 `json:"p50_seconds"`
			P99                       float64 `json:"p99_seconds"`
			ProxyCPUSecondsPerRequest float64 `json:"proxy_cpu_seconds_per_request"`
		} `json:"medians"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	med := r.medians()
	for _, w := range doc.Medians {
		m := med[w.Case]
		// 1 ns: edgebench truncates CPU per request to whole nanoseconds.
		if math.Abs(m.rps-w.RPS) > 0.01 || math.Abs(m.p50-w.P50) > 1e-9 || math.Abs(m.p99-w.P99) > 1e-9 ||
			math.Abs(m.cpuPerR-w.ProxyCPUSecondsPerRequest) > 1e-9 {
			t.Errorf("%s: charts %+v, edgebench %+v", w.Case, m, w)
		}
	}
	if len(doc.Medians) == 0 {
		t.Fatal("no medians in edgebench.json")
	}
}
