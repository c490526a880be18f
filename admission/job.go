// Package admission asks admission controllers about each CI job a cell hands out, before a
// runner gets it. What a controller is told about a job never holds its token, a variable's
// value, credentials or the repository URL's userinfo.
package admission

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// Request is what a controller is asked about one job.
type Request struct {
	Cell   uint64 `json:"cell"`
	Job    Job    `json:"job"`
	Runner Runner `json:"runner"`
}

// Job is a job as controllers see it.
type Job struct {
	ID          uint64   `json:"id"`
	Name        string   `json:"name"`
	Stage       string   `json:"stage"`
	ProjectID   uint64   `json:"project_id"`
	ProjectPath string   `json:"project_path"`
	PipelineID  uint64   `json:"pipeline_id,omitempty"`
	Ref         string   `json:"ref"`
	SHA         string   `json:"sha"`
	Image       string   `json:"image,omitempty"`
	Services    []string `json:"services,omitempty"`
	Variables   []string `json:"variables"` // names only
}

// Runner is the runner that asked for a job, from its jobs/request body's info.
type Runner struct {
	Executor     string `json:"executor"`
	Platform     string `json:"platform"`
	Architecture string `json:"architecture"`
	Version      string `json:"version"`
	Capability   string `json:"capability"`
}

// payload is the part of a cell's 201 answer to jobs/request that admission reads.
type payload struct {
	ID      uint64 `json:"id"`
	Token   string `json:"token"`
	JobInfo struct {
		Name      string `json:"name"`
		Stage     string `json:"stage"`
		ProjectID uint64 `json:"project_id"`
	} `json:"job_info"`
	GitInfo struct {
		RepoURL string `json:"repo_url"`
		Ref     string `json:"ref"`
		SHA     string `json:"sha"`
	} `json:"git_info"`
	Image *struct {
		Name string `json:"name"`
	} `json:"image"`
	Services []struct {
		Name string `json:"name"`
	} `json:"services"`
	Variables []struct {
		Key    string `json:"key"`
		Value  string `json:"value"`
		Public bool   `json:"public"`
	} `json:"variables"`
}

// FromPayload reads a cell's 201 answer to jobs/request: what controllers are told, and the job's
// token, which edge keeps to fail the job at its cell and never passes on.
func FromPayload(cell uint64, body []byte, r Runner) (Request, string, error) {
	var p payload
	if err := json.Unmarshal(body, &p); err != nil || p.ID == 0 || p.Token == "" {
		return Request{}, "", ErrNotAJob
	}
	j := Job{ID: p.ID, Name: p.JobInfo.Name, Stage: p.JobInfo.Stage, ProjectID: p.JobInfo.ProjectID,
		ProjectPath: projectPath(p.GitInfo.RepoURL), Ref: p.GitInfo.Ref, SHA: p.GitInfo.SHA, Variables: []string{}}
	if p.Image != nil {
		j.Image = p.Image.Name
	}
	for _, s := range p.Services {
		j.Services = append(j.Services, s.Name)
	}
	for _, v := range p.Variables {
		j.Variables = append(j.Variables, v.Key)
		// The pipeline id is a predefined public variable: a fact about the job, not a secret.
		if v.Key == "CI_PIPELINE_ID" && v.Public {
			j.PipelineID, _ = strconv.ParseUint(v.Value, 10, 64)
		}
	}
	return Request{Cell: cell, Job: j, Runner: r}, p.Token, nil
}

// projectPath is the project's path from its repository URL: no userinfo, no .git.
func projectPath(repo string) string {
	// Userinfo is dropped before parsing: a token with characters url.Parse refuses there
	// (GitLab's "[MASKED]") must not cost the path.
	if scheme, rest, ok := strings.Cut(repo, "://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			repo = scheme + "://" + host[i+1:] + "/" + path
		}
	}
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
}
