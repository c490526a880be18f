package cellrouter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/admission"
	"gitlab.com/edge/edge/internal/jsonspan"
	"gitlab.com/edge/edge/wire"
)

// Admission asks controllers about every job a cell hands out, before the runner gets it.
type Admission struct {
	Controllers []*admission.Controller
	// DryRun logs and counts each verdict and hands every job out unchanged.
	DryRun bool
	// Failer's Backoff and CallTimeout fail rejected jobs; its Transport is the cell's.
	Failer admission.Failer
}

func (a *Admission) mode() string {
	if a.DryRun {
		return "dry_run"
	}
	return "enabled"
}

// asked are the names of the controllers asked about a job of cell.
func (a *Admission) asked(cell uint64) []string {
	names := []string{}
	for _, c := range a.Controllers {
		if c.InScope(cell) {
			names = append(names, c.Name)
		}
	}
	return names
}

// maxJobAnswer bounds the job answer edge holds to ask controllers about it.
const maxJobAnswer = 8 << 20

// leadingToken is the job's token from the start of an answer too large to read whole (GitLab
// writes id and token first).
func leadingToken(body []byte) string {
	raw, ok := topLevelMember(body, "token", false)
	if !ok || len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	tok, _ := jsonspan.Unquote(raw)
	return tok
}

// admissionMetrics count verdicts per controller and per cell, and the time admission adds.
type admissionMetrics struct {
	decisions *prometheus.CounterVec
	errors    *prometheus.CounterVec
	jobs      *prometheus.CounterVec
	duration  prometheus.Histogram
	calls     *prometheus.HistogramVec
	failures  *prometheus.CounterVec
}

func newAdmissionMetrics() *admissionMetrics {
	return &admissionMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_admission_decisions_total",
			Help: "Controllers' decisions on jobs, by controller and decision (admitted or rejected; a failed call counts as its on_error says).",
		}, []string{"controller", "decision"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_admission_errors_total",
			Help: "Calls to a controller that failed or timed out, by controller.",
		}, []string{"controller"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_admission_jobs_total",
			Help: "Jobs admission decided on, by cell, verdict (admitted or rejected) and mode (enabled or dry_run).",
		}, []string{"cell", "verdict", "mode"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edge_admission_duration_seconds",
			Help:    "Time admission added to a job's answer: reading it and asking every controller in scope.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "edge_admission_controller_duration_seconds",
			Help:    "Time each controller took to answer (or to fail), as edge saw it, by controller.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"controller"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_admission_failed_jobs_total",
			Help: "Rejected jobs failed at their cell, by outcome: failed, or gave_up after retries (logged with the job id).",
		}, []string{"outcome"}),
	}
}

// zero makes each controller's series (and the failures') exist at 0 before the first job: a
// rule or panel on them reads 0, not nothing.
func (m *admissionMetrics) zero(controllers []*admission.Controller) {
	for _, c := range controllers {
		m.errors.WithLabelValues(c.Name)
		m.calls.WithLabelValues(c.Name)
		for _, d := range []string{"admitted", "rejected"} {
			m.decisions.WithLabelValues(c.Name, d)
		}
	}
	m.failures.WithLabelValues("failed")
	m.failures.WithLabelValues("gave_up")
}

func (m *admissionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.decisions, m.errors, m.jobs, m.duration, m.calls, m.failures}
}

// jobAnswer is what edge does with a cell's answer to jobs/request: learn the job's cell and,
// with admission, ask the controllers before the runner sees the job.
func (p *Router) jobAnswer(t *target, resp *http.Response) error {
	if resp.StatusCode != http.StatusCreated || resp.Body == nil {
		return nil
	}
	if p.admission == nil {
		p.learnJob(t.cell, resp)
		return nil
	}
	start := time.Now()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJobAnswer+1))
	if err != nil {
		return fmt.Errorf("reading the job: %w", err)
	}
	tooLarge := len(body) > maxJobAnswer
	if tooLarge {
		resp.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(body), resp.Body), closer: resp.Body}
	} else {
		resp.Body.Close()
		resp.Body = wholeBody(body, http.NoBody)
	}
	if id, ok := topLevelUint(body, "id"); ok && id > 0 && p.learned != nil {
		p.learned.Learn(id, t.cell.ID)
		p.metrics.learnedJobs.Inc()
	}
	pl := pollOf(resp.Request)
	var runner admission.Runner
	if pl != nil {
		runner = pl.runner
	}
	if p.admit(resp.Request.Context(), t, body, tooLarge, runner, start) {
		return nil
	}
	resp.Body.Close()
	if pl != nil {
		pl.rejected = true
	}
	// The runner polls again; the job it never saw has been failed at its cell.
	resp.StatusCode, resp.Status = http.StatusNoContent, "204 No Content"
	resp.Body, resp.ContentLength = http.NoBody, 0
	for _, k := range []string{"Content-Length", "Content-Type", "Content-Encoding", "Etag"} {
		resp.Header.Del(k)
	}
	return nil
}

// admit asks the controllers about one job and, if they reject it (mode enabled), fails it at
// its cell; false means the runner must not get it.
func (p *Router) admit(ctx context.Context, t *target, body []byte, tooLarge bool, runner admission.Runner, start time.Time) bool {
	a, m := p.admission, p.metrics.admission
	cell := strconv.FormatUint(t.cell.ID, 10)
	// The runner may go while controllers think; the verdict still stands and is acted on.
	ctx = context.WithoutCancel(ctx)
	var v admission.Verdict
	req, token, err := admission.FromPayload(t.cell.ID, body, runner)
	switch {
	case tooLarge:
		// No controller can be asked about a job edge will not hold; a larger job must not
		// slip past them either: each counts as failed, by its on_error.
		req.Job.ID, _ = topLevelUint(body, "id")
		token = leadingToken(body)
		v = admission.Unread(a.Controllers, t.cell.ID, errJobTooLarge)
	case err != nil:
		// Nothing to ask about and nothing edge could fail: the answer goes on as it came.
		p.log.Warn("admission: a 201 answer to jobs/request does not read as a job; handed on unchecked", "cell", cell, "bytes", len(body), "error", err)
		return true
	default:
		v = admission.Ask(ctx, a.Controllers, req)
	}
	m.duration.Observe(time.Since(start).Seconds())
	for _, r := range v.Results {
		decision := "rejected"
		if r.Admitted {
			decision = "admitted"
		}
		m.decisions.WithLabelValues(r.Controller, decision).Inc()
		m.calls.WithLabelValues(r.Controller).Observe(r.Took.Seconds())
		if r.Err != nil {
			m.errors.WithLabelValues(r.Controller).Inc()
			p.log.Warn("admission controller failed", "controller", r.Controller, "job_id", req.Job.ID, "cell", cell,
				"took", r.Took, "on_error", decision, "error", r.Err)
		}
	}
	verdict := "admitted"
	if !v.Admitted {
		verdict = "rejected"
	}
	m.jobs.WithLabelValues(cell, verdict, a.mode()).Inc()
	rej, rejected := v.Rejection()
	if !rejected {
		return true
	}
	p.log.Info("admission rejected a job", "job_id", req.Job.ID, "cell", cell, "controller", rej.Controller,
		"reason", rej.Reason, "mode", a.mode(), "project_id", req.Job.ProjectID)
	if a.DryRun {
		return true
	}
	if req.Job.ID == 0 || token == "" {
		p.log.Error("admission: a rejected job has no id or token edge could read; the runner does not get it and the cell keeps it running", "cell", cell)
		return false
	}
	line := fmt.Sprintf("\x1b[31;1medge admission: job rejected by controller %q: %s\x1b[0;m\n", rej.Controller, rej.Reason)
	f := a.Failer
	f.Transport = &cellCaller{t: t, base: p.cellTransport}
	if err := f.Fail(ctx, t.cell.URL, req.Job.ID, token, line); err != nil {
		m.failures.WithLabelValues("gave_up").Inc()
		p.log.Error("admission: could not fail a rejected job at its cell; it was not handed out", "job_id", req.Job.ID, "cell", cell, "error", err)
	} else {
		m.failures.WithLabelValues("failed").Inc()
	}
	return false
}

// cellCaller sends edge's own calls to a cell (failing a job) to one of its usable addresses.
type cellCaller struct {
	t    *target
	base http.RoundTripper
}

func (c *cellCaller) RoundTrip(req *http.Request) (*http.Response, error) {
	a := c.t.health.Pick()
	if a == nil {
		return nil, fmt.Errorf("cell %d: %w", c.t.cell.ID, errNoUsableAddress)
	}
	req.URL.Scheme, req.URL.Host = a.URL.Scheme, a.URL.Host
	a.Begin()
	defer a.End()
	return (&addressTransport{c.base, c.t.health, a}).RoundTrip(req)
}

// explainAdmission says which controllers a jobs/request's job would be asked about.
func (p *Router) explainAdmission(d *Decision, r *http.Request) {
	if p.admission == nil || d.Cell == nil || r.Method != http.MethodPost || r.URL.Path != wire.JobsRequestPath {
		return
	}
	d.Admission = &AdmissionPlan{Mode: p.admission.mode(), Controllers: p.admission.asked(d.Cell.ID)}
}

// AdmissionPlan is what explain says admission would do with the job a runner gets.
type AdmissionPlan struct {
	Mode        string   `json:"mode"`
	Controllers []string `json:"controllers"`
}
