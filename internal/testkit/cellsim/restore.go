package cellsim

import (
	"errors"
	"fmt"
)

// RestoreJob gives the cell a job it had before its process restarted, with the same id, token,
// state and trace, as a GitLab cell whose database outlives its web processes: a pending job is
// queued again (jobs restored in the order of the calls), a job in any other state is known to
// the job calls (PUT, trace, artifacts) but never handed out again. It wakes held job requests
// when it queues a job, like AddJob.
func (c *Cell) RestoreJob(j Job) error {
	if j.ID == 0 || j.Token == "" {
		return errors.New("cellsim: restore job: id and token are required")
	}
	state := j.State
	if state == "" {
		state = "pending"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs[j.ID] != nil {
		return fmt.Errorf("cellsim: restore job %d: %w", j.ID, ErrJobExists)
	}
	c.jobs[j.ID] = &job{
		id: j.ID, token: j.Token, state: state, trace: append([]byte(nil), j.Trace...),
		artifactSHA256: j.ArtifactSHA256, artifactSize: j.ArtifactSize, hasArtifact: j.ArtifactSHA256 != "",
	}
	c.issued[j.Token] = true
	if j.ID >= c.nextJobID {
		c.nextJobID = j.ID + 1
	}
	if state == "pending" {
		c.pending = append(c.pending, j.ID)
		c.changeQueueLocked()
	}
	return nil
}
