package cellrouter

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/admission"
)

// maxCapabilities bounds the capability label; runners past it are counted as "other".
const maxCapabilities = 1000

// maxRunnerKinds and maxInfoBlock bound the cache of runners' info blocks already read (8 MiB
// at most); past them a poll's block is read again. gitlab-runner's block is under 1 KiB.
const (
	maxRunnerKinds = 4096
	maxInfoBlock   = 2 << 10
)

// queueSignals are what edge sees of the job queue, per cell and runner capability: polls held,
// how they were answered, and how long a poll waited for its job.
type queueSignals struct {
	held     *prometheus.GaugeVec
	answered *prometheus.CounterVec
	wait     *prometheus.HistogramVec
	info     *prometheus.GaugeVec

	mu           sync.Mutex
	capabilities map[string]bool
	// kinds maps a jobs/request body's raw info block to what it says: a runner polls with
	// the same block every time, so reading it is a map lookup after the first poll.
	kinds map[string]*runnerKind
}

// runnerKind is one info block read: the runner, its capability label and that label's
// counters per cell, resolved once.
type runnerKind struct {
	runner admission.Runner
	label  string
	byCell map[uint64]*pollCounters
}

type pollCounters struct {
	held                       prometheus.Gauge
	job, noJob, rejected, errs prometheus.Counter
	wait                       prometheus.Observer
}

func newQueueSignals() *queueSignals {
	return &queueSignals{
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "edge_runner_polls_held",
			Help: "jobs/request long polls being held now, by cell and runner capability.",
		}, []string{"cell", "capability"}),
		answered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_runner_polls_total",
			Help: "jobs/request polls answered, by cell, runner capability and answer: job, no_job, rejected (a job admission rejected; the runner got 204) or error.",
		}, []string{"cell", "capability", "answer"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "edge_runner_job_wait_seconds",
			Help:    "How long a poll that got a job waited for it, by cell and runner capability.",
			Buckets: []float64{.01, .05, .1, .5, 1, 2.5, 5, 10, 20, 30, 45, 60},
		}, []string{"cell", "capability"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "edge_runner_capability_info",
			Help: "The executor, platform and architecture behind each capability hash (always 1).",
		}, []string{"capability", "executor", "platform", "architecture"}),
		capabilities: map[string]bool{},
		kinds:        map[string]*runnerKind{},
	}
}

func (s *queueSignals) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.held, s.answered, s.wait, s.info}
}

// kindLocked reads the runner of a jobs/request body, from the cache when its info block was
// seen; s.mu is held.
func (s *queueSignals) kindLocked(body []byte) *runnerKind {
	info, _ := topLevelMember(body, "info", false)
	if k := s.kinds[string(info)]; k != nil {
		return k
	}
	r := admission.RunnerOf(body)
	k := &runnerKind{runner: r, label: s.labelLocked(r), byCell: map[uint64]*pollCounters{}}
	if len(s.kinds) < maxRunnerKinds && len(info) <= maxInfoBlock {
		s.kinds[string(info)] = k
	}
	return k
}

// labelLocked is the capability as a label value: its hash, until maxCapabilities are known.
func (s *queueSignals) labelLocked(r admission.Runner) string {
	switch {
	case r.Capability == admission.Unknown || s.capabilities[r.Capability]:
		return r.Capability
	case len(s.capabilities) >= maxCapabilities:
		return "other"
	}
	s.capabilities[r.Capability] = true
	s.info.WithLabelValues(r.Capability, r.Executor, r.Platform, r.Architecture).Set(1)
	return r.Capability
}

// countersLocked are the poll counters of k's label in cell, resolved once; s.mu is held.
func (s *queueSignals) countersLocked(k *runnerKind, cell uint64) *pollCounters {
	if c := k.byCell[cell]; c != nil {
		return c
	}
	id := strconv.FormatUint(cell, 10)
	c := &pollCounters{
		held:     s.held.WithLabelValues(id, k.label),
		job:      s.answered.WithLabelValues(id, k.label, "job"),
		noJob:    s.answered.WithLabelValues(id, k.label, "no_job"),
		rejected: s.answered.WithLabelValues(id, k.label, "rejected"),
		errs:     s.answered.WithLabelValues(id, k.label, "error"),
		wait:     s.wait.WithLabelValues(id, k.label),
	}
	k.byCell[cell] = c
	return c
}

// jobPoll is one jobs/request on its way: the runner that sent it, and what admission made of
// the job it got.
type jobPoll struct {
	runner   admission.Runner
	counters *pollCounters
	start    time.Time
	rejected bool
}

type pollKey struct{}

func pollOf(r *http.Request) *jobPoll {
	p, _ := r.Context().Value(pollKey{}).(*jobPoll)
	return p
}

// startPoll reads the runner from the body edge already holds (replayed in memory) and counts
// the poll as held.
func (s *queueSignals) startPoll(r *http.Request, cell uint64) jobPoll {
	var body []byte
	if b, ok := r.Body.(*replayBody); ok {
		body = b.data
	}
	s.mu.Lock()
	k := s.kindLocked(body)
	p := jobPoll{runner: k.runner, counters: s.countersLocked(k, cell), start: time.Now()}
	s.mu.Unlock()
	p.counters.held.Inc()
	return p
}

// endPoll counts how the poll was answered.
func (p *jobPoll) end(status int) {
	c := p.counters
	c.held.Dec()
	switch {
	case p.rejected:
		c.rejected.Inc()
	case status == http.StatusCreated:
		c.job.Inc()
		c.wait.Observe(time.Since(p.start).Seconds())
	case status == http.StatusNoContent:
		c.noJob.Inc()
	default:
		c.errs.Inc()
	}
}
