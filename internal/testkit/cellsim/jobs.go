package cellsim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"gitlab.com/edge/edge/tokens"
)

type job struct {
	id             uint64
	token          string
	state          string // pending, running, success, failed
	failureReason  string // with failed: why, as the runner said
	trace          []byte
	artifactSHA256 string
	artifactSize   int64
	hasArtifact    bool
}

// Job is what the cell knows about one of its jobs.
type Job struct {
	ID             uint64
	Token          string
	State          string
	FailureReason  string
	Trace          []byte
	ArtifactSHA256 string
	ArtifactSize   int64
}

// AddJob queues a job with the cell's next job id for the next job request and returns the id.
// A runner holding a long poll gets it at once.
func (c *Cell) AddJob() (uint64, error) {
	c.mu.Lock()
	id := c.nextJobID
	for c.jobs[id] != nil {
		id++
	}
	c.nextJobID = id + 1
	c.mu.Unlock()
	if err := c.AddJobWithID(id); err != nil {
		return 0, err
	}
	return id, nil
}

// AddJobWithID queues a job with the given id, e.g. one outside the cell's id ranges, as a
// job created before the cell got its ranges would be.
func (c *Cell) AddJobWithID(id uint64) error {
	token, err := c.mintJobToken(id)
	if err != nil {
		return fmt.Errorf("cellsim: add job %d: %w", id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs[id] != nil {
		return fmt.Errorf("cellsim: add job %d: %w", id, ErrJobExists)
	}
	c.jobs[id] = &job{id: id, token: token, state: "pending"}
	c.issued[token] = true
	c.pending = append(c.pending, id)
	c.changeQueueLocked()
	return nil
}

// Job returns a copy of what the cell knows about job id.
func (c *Cell) Job(id uint64) (Job, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok {
		return Job{}, false
	}
	return Job{
		ID: j.id, Token: j.token, State: j.state, FailureReason: j.failureReason, Trace: append([]byte(nil), j.trace...),
		ArtifactSHA256: j.artifactSHA256, ArtifactSize: j.artifactSize,
	}, true
}

// claimLocked hands the oldest queued job to a runner.
func (c *Cell) claimLocked() *job {
	if len(c.pending) == 0 {
		return nil
	}
	j := c.jobs[c.pending[0]]
	c.pending = c.pending[1:]
	j.state = "running"
	return j
}

// mintJobToken issues a job token: a JWT after "glcbt-" when the cell signs, else an opaque
// token like the ones GitLab issued before JWT job tokens.
func (c *Cell) mintJobToken(id uint64) (string, error) {
	s := c.opts.JobToken
	if s == nil {
		var b [10]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("random: %w", err)
		}
		return "glcbt-" + hex.EncodeToString(b[:]), nil
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	now := time.Now()
	keys := tokens.Keys{}.Set(tokens.KeyCell, c.opts.CellID).Set(tokens.KeyOrganization, 1)
	raw, err := tokens.MintJobJWT(tokens.MintJobOptions{
		Key: s.Key, Algorithm: s.Algorithm, KID: s.KID, Issuer: s.Issuer, Audience: s.Audience,
		Keys: keys, LegacyCellID: s.LegacyCellID, JobID: id, IssuedAt: now, ExpiresAt: now.Add(ttl),
	})
	if err != nil {
		return "", fmt.Errorf("mint job JWT: %w", err)
	}
	return "glcbt-" + raw, nil
}

// jobPayload is the answer to a job request, with the fields gitlab-runner reads (its
// JobResponse); values are minimal but of the right shape.
func (c *Cell) jobPayload(j *job) map[string]any {
	project := 1000 + c.opts.CellID
	return map[string]any{
		"id":              j.id,
		"token":           j.token,
		"allow_git_fetch": true,
		"job_info": map[string]any{
			"id": j.id, "name": "test", "stage": "test",
			"project_id": project, "project_name": "demo",
			"time_in_queue_seconds": 0.5,
		},
		"git_info": map[string]any{
			"repo_url":   fmt.Sprintf("https://gitlab-ci-token:%s@cell%d.example.com/demo/demo.git", "[MASKED]", c.opts.CellID),
			"ref":        "main",
			"sha":        "69b18e5ed3610cf646119c3e38f462c64ec462b7",
			"before_sha": "0000000000000000000000000000000000000000",
			"ref_type":   "branch",
			"refspecs":   []string{"+refs/heads/main:refs/remotes/origin/main"},
			"depth":      20,
		},
		"runner_info": map[string]any{"timeout": 3600, "runner_session_url": nil},
		"variables": []map[string]any{
			{"key": "CI_JOB_ID", "value": fmt.Sprint(j.id), "public": true, "masked": false},
			{"key": "CI_PROJECT_ID", "value": fmt.Sprint(project), "public": true, "masked": false},
			{"key": "CI_PIPELINE_ID", "value": fmt.Sprint(PipelineID(j.id)), "public": true, "masked": false},
			// A project's secret: what edge must never pass on (to admission controllers).
			{"key": "DEPLOY_PASSWORD", "value": SecretValue(j.id), "public": false, "masked": true},
		},
		"steps": []map[string]any{{
			"name": "script", "script": []string{"echo hello from cell " + fmt.Sprint(c.opts.CellID)},
			"timeout": 3600, "when": "on_success", "allow_failure": false,
		}},
		"image":        map[string]any{"name": "alpine:3.20"},
		"services":     []any{},
		"artifacts":    []map[string]any{{"name": "artifacts", "untracked": false, "paths": []string{"out/"}, "when": "on_success", "artifact_type": "archive", "artifact_format": "zip", "expire_in": "1 day"}},
		"cache":        []any{},
		"credentials":  []any{},
		"dependencies": []any{},
		"features":     map[string]any{"trace_sections": true, "failure_reasons": []string{"script_failure", "runner_system_failure", "job_execution_timeout"}},
	}
}

// PipelineID is the pipeline of job id, as its CI_PIPELINE_ID variable says.
func PipelineID(id uint64) uint64 { return 500000 + id }

// SecretValue is the value of job id's masked DEPLOY_PASSWORD variable.
func SecretValue(id uint64) string { return fmt.Sprintf("cellsim-secret-%d", id) }
