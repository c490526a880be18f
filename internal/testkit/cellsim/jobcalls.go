package cellsim

import (
	"net/http"
	"strconv"
)

// traceUpdateInterval is the X-GitLab-Trace-Update-Interval GitLab sends when nobody watches
// the job log.
const traceUpdateInterval = "60"

// jobCall finds the job named in the path and authenticates the job token. The job is what
// routing is judged by: a job id this cell does not own means the request was misrouted.
// A zero response means go on.
func (c *Cell) jobCall(ex *exchange, body bodyFields) (*job, response) {
	return c.jobCallAllowing(ex, body, false)
}

// jobCallAllowing is jobCall that, when anonymous is set, also lets a request with no token.
func (c *Cell) jobCallAllowing(ex *exchange, body bodyFields, anonymous bool) (*job, response) {
	token := ex.takeToken(body)
	id, err := strconv.ParseUint(ex.r.PathValue("id"), 10, 64)
	if err != nil {
		return nil, messageResponse(http.StatusNotFound)
	}
	ex.rec.JobID = id
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok {
		ex.rec.Misrouted = true
		return nil, messageResponse(http.StatusNotFound)
	}
	// Any job token this cell issued may read artifacts of its jobs (dependent jobs do).
	ex.rec.Authorized = token != "" && (token == j.token || c.issued[token]) || token == "" && anonymous
	if !ex.rec.Authorized {
		return nil, messageResponse(http.StatusForbidden)
	}
	return j, response{}
}

// updateJob is PUT /jobs/:id: the runner reports state; 200 with Job-Status.
func (c *Cell) updateJob(ex *exchange) response {
	b, tooBig, err := ex.readBody(maxJSONBody)
	if err != nil {
		return ex.failedRead()
	}
	if tooBig {
		return messageResponse(http.StatusRequestEntityTooLarge)
	}
	f, ok := parseBody(ex.r.Header.Get("Content-Type"), b)
	if !ok {
		return messageResponse(http.StatusBadRequest)
	}
	j, res := c.jobCall(ex, f)
	if res.status != 0 {
		return res
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A job that ended stays as it ended: GitLab answers 403 with its status.
	if ended(j.state) && f.State != j.state {
		return messageResponse(http.StatusForbidden).with("Job-Status", j.state)
	}
	switch f.State {
	case "running", "success", "failed", "canceled":
		j.state = f.State
	}
	if f.State == "failed" {
		j.failureReason = f.FailureReason
	}
	return textResponse(http.StatusOK, "200").
		with("Job-Status", j.state).
		with("X-GitLab-Trace-Update-Interval", traceUpdateInterval)
}

func ended(state string) bool { return state == "success" || state == "failed" || state == "canceled" }

// maxTracePatch bounds one trace PATCH (gitlab-runner sends at most about 1 MiB).
const maxTracePatch = 16 << 20

// patchTrace is PATCH /jobs/:id/trace with Content-Range "start-end" (end inclusive). The
// patch must continue the stored trace: 202 with Range 0-<size>, or 416 with the size.
func (c *Cell) patchTrace(ex *exchange) response {
	j, res := c.jobCall(ex, bodyFields{})
	if res.status != 0 {
		return res
	}
	cr := ex.r.Header.Get("Content-Range")
	if cr == "" {
		return jsonResponse(http.StatusBadRequest, map[string]string{"message": "400 Missing header Content-Range"})
	}
	start, _, ok := parseContentRange(cr)
	if !ok {
		return jsonResponse(http.StatusBadRequest, map[string]string{"message": "400 Bad Content-Range"})
	}
	patch, tooBig, err := ex.readBody(maxTracePatch)
	if err != nil {
		return ex.failedRead()
	}
	if tooBig {
		return messageResponse(http.StatusRequestEntityTooLarge)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	size := int64(len(j.trace))
	if start != size {
		return messageResponse(http.StatusRequestedRangeNotSatisfiable).with("Range", "0-"+strconv.FormatInt(size, 10))
	}
	j.trace = append(j.trace, patch...)
	return emptyResponse(http.StatusAccepted).
		with("Job-Status", j.state).
		with("Range", "0-"+strconv.Itoa(len(j.trace))).
		with("X-GitLab-Trace-Update-Interval", traceUpdateInterval)
}

func parseContentRange(s string) (start, end int64, ok bool) {
	for i := range len(s) {
		if s[i] != '-' {
			continue
		}
		a, err1 := strconv.ParseInt(s[:i], 10, 64)
		b, err2 := strconv.ParseInt(s[i+1:], 10, 64)
		if err1 != nil || err2 != nil || a < 0 || b < a-1 {
			return 0, 0, false
		}
		return a, b, true
	}
	return 0, 0, false
}
