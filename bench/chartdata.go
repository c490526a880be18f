package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrNoChartData: the input holds nothing the chart can draw (no case ran with its baseline, or
// no memory figure), so no file is better than an empty picture.
var ErrNoChartData = errors.New("nothing to draw")

// ChartRuns is as much of edgebench.json (bench/cmd/edgebench) as the charts read: how the run
// was made and every wrk run of every round. The charts take their own medians from the runs,
// as edgebench does, instead of trusting the medians array of an older writer.
type ChartRuns struct {
	Time        time.Time  `json:"time"`
	Rounds      int        `json:"rounds"`
	Duration    string     `json:"duration"`
	Connections int        `json:"connections"`
	Threads     int        `json:"threads"`
	Pinned      bool       `json:"pinned"`
	Runs        []ChartRun `json:"runs"`
}

// ChartRun is one case's wrk run in one round.
type ChartRun struct {
	Case              string  `json:"case"`
	Round             int     `json:"round"`
	Requests          int64   `json:"requests"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	P50Seconds        float64 `json:"p50_seconds"`
	P99Seconds        float64 `json:"p99_seconds"`
	ProxyCPUSeconds   float64 `json:"proxy_cpu_seconds"`
}

// ParseChartRuns reads edgebench.json.
func ParseChartRuns(b []byte) (ChartRuns, error) {
	var r ChartRuns
	if err := json.Unmarshal(b, &r); err != nil {
		return ChartRuns{}, fmt.Errorf("edgebench.json: %w", err)
	}
	return r, nil
}

// chartMedian is one case's medians over its rounds, in seconds.
type chartMedian struct {
	rounds                 int
	rps, p50, p99, cpuPerR float64
}

// medians takes each measure's median over the rounds independently, and CPU per request as
// the median of each round's proxy CPU over that round's requests: Summarize's definitions,
// so a chart's ratio is the goals table's.
func (r ChartRuns) medians() map[string]chartMedian {
	type samples struct{ rps, p50, p99, cpu []float64 }
	by := map[string]*samples{}
	for _, run := range r.Runs {
		s := by[run.Case]
		if s == nil {
			s = &samples{}
			by[run.Case] = s
		}
		s.rps = append(s.rps, run.RequestsPerSecond)
		s.p50 = append(s.p50, run.P50Seconds)
		s.p99 = append(s.p99, run.P99Seconds)
		cpu := 0.0
		if run.Requests > 0 {
			cpu = run.ProxyCPUSeconds / float64(run.Requests)
		}
		s.cpu = append(s.cpu, cpu)
	}
	out := make(map[string]chartMedian, len(by))
	for id, s := range by {
		out[id] = chartMedian{rounds: len(s.rps), rps: Median(s.rps), p50: Median(s.p50), p99: Median(s.p99), cpuPerR: Median(s.cpu)}
	}
	return out
}

// setting says how the run was made, for a chart's subtitle.
func (r ChartRuns) setting() string {
	threads := fmt.Sprintf("%d threads", r.Threads)
	if r.Threads == 1 {
		threads = "1 thread"
	}
	pin := "pinned"
	if !r.Pinned {
		pin = "unpinned"
	}
	return fmt.Sprintf("edgebench, %s UTC: medians of %d rounds of %s at %d connections; wrk %s; %s",
		r.Time.UTC().Format("2006-01-02 15:04"), r.Rounds, r.Duration, r.Connections, threads, pin)
}

// chartSection is a group of cases that send the same request, so that each is compared with
// the nginx case that proxied that request in the same run.
type chartSection struct {
	title string
	base  string
	cases []string
}

// chartSections: the peers run edge-a's GET only, and the 1 KiB GET and the POST have their own
// nginx cases, so one nginx baseline for all would compare different requests. The tunnel cases
// are left out: their path has more processes and its goals are against edge-a (the tunnel
// table).
var chartSections = []chartSection{
	{"edge-a's GET (a 12-byte answer) and its peers; edge-b to edge-d route by a token", CaseNginx,
		[]string{CaseDirect, CaseNginx, CaseHAProxy, CaseCaddy, CasePlain, CaseFloor, CaseEdgeA, CaseEdgeNetHTTP, CaseEdgeB, CaseEdgeC, CaseEdgeD}},
	{"GET of a 1 KiB answer", CaseNginx1K, []string{CaseNginx1K, CaseEdge1K}},
	{"POST with a 512 B body", CaseNginxPost, []string{CaseNginxPost, CasePlainPost, CaseEdgePost}},
}

// chartLabel is a bar's name: the case ID of the tables, with a word for the ones that are no
// product.
func chartLabel(id string) string {
	switch id {
	case CaseDirect:
		return "direct (no proxy)"
	case CaseFloor:
		return "floor (Go, no net/http)"
	case CasePlain:
		return "plain (httputil)"
	}
	return id
}

// ChartLongPoll is as much of longpoll.json (bench/cmd/longpollsoak) as the held-polls chart
// reads; the memory figures are pointers because older soaks did not write all of them.
type ChartLongPoll struct {
	PollsRequested       int64    `json:"polls_requested"`
	PollsHeld            int64    `json:"polls_held"`
	LimitedBy            string   `json:"limited_by"`
	HoldSeconds          float64  `json:"hold_s"`
	PollRate             float64  `json:"poll_rate"`
	Answered             int64    `json:"answered"`
	Answered204          int64    `json:"answered_204"`
	Retried              int64    `json:"retried"`
	EdgeRSSBeforeMiB     *float64 `json:"edge_rss_before_mib"`
	EdgeRSSMaxMiB        *float64 `json:"edge_rss_max_mib"`
	EdgeHeapInuseHeldMiB *float64 `json:"edge_heap_inuse_held_mib"`
}

// ParseChartLongPoll reads longpoll.json.
func ParseChartLongPoll(b []byte) (ChartLongPoll, error) {
	var lp ChartLongPoll
	if err := json.Unmarshal(b, &lp); err != nil {
		return ChartLongPoll{}, fmt.Errorf("%s: %w", LongPollFile, err)
	}
	return lp, nil
}
