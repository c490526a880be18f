package cellsim

import (
	"net/http"
	"time"
)

const lastUpdateHeader = "X-GitLab-Last-Update"

// requestJob is POST /jobs/request, Rails and Workhorse together: a queued job is handed out
// at once (201); a runner whose last_update is not the current queue value is answered at once
// (204); a runner that is up to date is held until a job is queued or LongPoll passes.
func (c *Cell) requestJob(ex *exchange) response {
	f, res := c.runnerCall(ex)
	if res.status != 0 {
		return res
	}
	ex.rec.LastUpdate = f.LastUpdate

	c.mu.Lock()
	if j := c.claimLocked(); j != nil {
		defer c.mu.Unlock()
		return c.jobHandedOut(ex, j)
	}
	current, changed := c.queueValue, c.queueChanged
	if f.LastUpdate != current || c.opts.LongPoll <= 0 {
		c.mu.Unlock()
		return emptyResponse(http.StatusNoContent).with(lastUpdateHeader, current)
	}
	c.held++
	c.mu.Unlock()

	start := time.Now()
	timer := time.NewTimer(c.opts.LongPoll)
	defer timer.Stop()
	defer func() {
		ex.rec.Held = time.Since(start)
		c.mu.Lock()
		c.held--
		c.mu.Unlock()
	}()

	select {
	case <-changed:
		c.mu.Lock()
		defer c.mu.Unlock()
		if j := c.claimLocked(); j != nil {
			return c.jobHandedOut(ex, j)
		}
		// Another runner took it: tell this one the new value so it asks again at once.
		return emptyResponse(http.StatusNoContent).with(lastUpdateHeader, c.queueValue)
	case <-timer.C:
		return emptyResponse(http.StatusNoContent).with(lastUpdateHeader, current)
	case <-ex.r.Context().Done():
		ex.rec.Canceled = true
		return canceledResponse()
	}
}

// jobHandedOut answers 201 with the job; c.mu is held.
func (c *Cell) jobHandedOut(ex *exchange, j *job) response {
	ex.rec.JobID = j.id
	return jsonResponse(http.StatusCreated, c.jobPayload(j)).with(lastUpdateHeader, c.queueValue)
}
