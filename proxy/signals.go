package proxy

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/admission"
)

// maxCapabilities bounds the capability label; runners past it are counted as "other".
const maxCapabilities = 1000

// queueSignals are what edge sees of the job queue, per cell and runner capability: polls held,
// how they were answered, and how long a poll waited for its job.
type queueSignals struct {
	held     *prometheus.GaugeVec
	answered *prometheus.CounterVec
	wait     *prometheus.HistogramVec
	info     *prometheus.GaugeVec

	mu   sync.Mutex
	seen map[string]bool
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
		seen: map[string]bool{},
	}
}

func (s *queueSignals) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.held, s.answered, s.wait, s.info}
}

// label is the capability as a label value: its hash, until maxCapabilities are known.
func (s *queueSignals) label(r admission.Runner) string {
	if r.Capability == admission.Unknown {
		return r.Capability
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[r.Capability] {
		return r.Capability
	}
	if len(s.seen) >= maxCapabilities {
		return "other"
	}
	s.seen[r.Capability] = true
	s.info.WithLabelValues(r.Capability, r.Executor, r.Platform, r.Architecture).Set(1)
	return r.Capability
}

// jobPoll is one jobs/request on its way: the runner that sent it, and what admission made of the
// job it got.
type jobPoll struct {
	runner     admission.Runner
	cell       string
	capability string
	start      time.Time
	rejected   bool
}

type pollKey struct{}

func pollOf(r *http.Request) *jobPoll {
	p, _ := r.Context().Value(pollKey{}).(*jobPoll)
	return p
}

// startPoll reads the runner from the body edge already holds (replayed in memory) and counts
// the poll as held.
func (s *queueSignals) startPoll(r *http.Request, cell uint64) (*http.Request, *jobPoll) {
	var body []byte
	if b, ok := r.Body.(*replayBody); ok {
		body = b.data
	}
	p := &jobPoll{runner: admission.RunnerOf(body), cell: strconv.FormatUint(cell, 10), start: time.Now()}
	p.capability = s.label(p.runner)
	s.held.WithLabelValues(p.cell, p.capability).Inc()
	return r.WithContext(context.WithValue(r.Context(), pollKey{}, p)), p
}

// endPoll counts how the poll was answered.
func (s *queueSignals) endPoll(p *jobPoll, status int) {
	s.held.WithLabelValues(p.cell, p.capability).Dec()
	answer := "error"
	switch {
	case p.rejected:
		answer = "rejected"
	case status == http.StatusCreated:
		answer = "job"
		s.wait.WithLabelValues(p.cell, p.capability).Observe(time.Since(p.start).Seconds())
	case status == http.StatusNoContent:
		answer = "no_job"
	}
	s.answered.WithLabelValues(p.cell, p.capability, answer).Inc()
}
