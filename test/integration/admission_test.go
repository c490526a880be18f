package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// runnersConfig is edge's runners section: admission controllers asked about each job.
type runnersConfig struct {
	Admission *admissionConfig `yaml:"admission,omitempty"`
}

type admissionConfig struct {
	Mode        string             `yaml:"mode"`
	Controllers []controllerConfig `yaml:"controllers"`
}

type controllerConfig struct {
	Name       string                 `yaml:"name"`
	URL        string                 `yaml:"url,omitempty"`
	Agent      *controllerAgentConfig `yaml:"agent,omitempty"`
	Timeout    string                 `yaml:"timeout,omitempty"`
	OnError    string                 `yaml:"on_error,omitempty"`
	Cells      []uint64               `yaml:"cells,omitempty"`
	SecretFile string                 `yaml:"secret_file,omitempty"`
}

type controllerAgentConfig struct {
	ID   string `yaml:"id"`
	Port int    `yaml:"port"`
	Path string `yaml:"path"`
}

// controller is an admission controller on 127.0.0.1 whose verdict the test switches: "admit",
// "reject" (with reason) or "hang" (until edge gives up, or the test ends). It keeps every call.
type controller struct {
	srv     *httptest.Server
	mu      sync.Mutex
	verdict string
	reason  string
	calls   []controllerCall
	cut     int // hanging calls whose caller went away
}

type controllerCall struct {
	auth string
	body []byte
}

func startController(t *testing.T) *controller {
	c := &controller{verdict: "admit"}
	release := make(chan struct{})
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.calls = append(c.calls, controllerCall{r.Header.Get("Authorization"), body})
		verdict, reason := c.verdict, c.reason
		c.mu.Unlock()
		if verdict == "hang" {
			select {
			case <-r.Context().Done():
				c.mu.Lock()
				c.cut++
				c.mu.Unlock()
			case <-release:
			}
			return
		}
		writeJSON(w, map[string]any{"admitted": verdict == "admit", "reason": reason})
	}))
	t.Cleanup(c.srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: a hanging call ends, then the server closes
	return c
}

func (c *controller) set(verdict, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.verdict, c.reason = verdict, reason
}

func (c *controller) snapshot() ([]controllerCall, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls), c.cut
}

// admissionCall is the part of a controller's request the test reads.
type admissionCall struct {
	Cell uint64 `json:"cell"`
	Job  struct {
		ID         uint64   `json:"id"`
		ProjectID  uint64   `json:"project_id"`
		Project    string   `json:"project_path"`
		PipelineID uint64   `json:"pipeline_id"`
		Image      string   `json:"image"`
		Variables  []string `json:"variables"`
	} `json:"job"`
	Runner struct {
		Executor   string `json:"executor"`
		Capability string `json:"capability"`
	} `json:"runner"`
}

// TestAdmission: a runner polls edge 0 of two edges; a legacy cell hands out jobs; edge asks an
// HTTP controller (signed calls) and one behind an agent connected to edge 1 (edge 0 -> edge 1 ->
// tunnel -> agent -> controller). A rejected job is failed at the cell and the runner gets 204; a
// hanging controller is cut at its timeout and its on_error applies; after a SIGHUP to dry_run
// rejected jobs are handed out. The controllers never see a token or a variable's value.
func TestAdmission(t *testing.T) {
	cell, err := cellsim.NewServer("", cellsim.Options{CellID: 1, Legacy: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cell.Close() })
	policy, incluster := startController(t), startController(t)
	secret := []byte(strings.Repeat("0123456789abcdef", 4))
	secretFile := filepath.Join(t.TempDir(), "policy.key")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	const policyTimeout, inclusterTimeout = 500 * time.Millisecond, 1500 * time.Millisecond
	inclusterPort := incluster.srv.Listener.Addr().(*net.TCPAddr).Port
	c := newTunnelClusterWith(t, 2, func(cfg *edgeConfig) {
		cfg.Cells = []cellConfig{{ID: 1, URL: cell.URL, Legacy: true}}
		cfg.Runners = &runnersConfig{Admission: &admissionConfig{Mode: "enabled", Controllers: []controllerConfig{
			{Name: "policy", URL: policy.srv.URL + "/admit", Timeout: policyTimeout.String(), OnError: "reject", Cells: []uint64{1}, SecretFile: secretFile},
			{Name: "incluster", Agent: &controllerAgentConfig{ID: "a1", Port: inclusterPort, Path: "/admit"}, Timeout: inclusterTimeout.String(), OnError: "admit"},
		}}}
	})
	agent := startAgentProc(t, "a1", c.edges[1].PublicURL, c.agentTokenFile("a1"), inclusterPort)
	c.mu.Lock()
	c.agents = append(c.agents, agent)
	c.mu.Unlock()
	c.waitHeld(t, "a1", c.edges[1], 15*time.Second)

	edge0 := c.edges[0]
	runnerTok := c.noteToken(runnerToken(t, 1))
	var jobs []uint64
	// next queues a job and has the runner poll edge 0 for it.
	next := func(t *testing.T) (uint64, answer, time.Duration) {
		t.Helper()
		id, err := cell.AddJob()
		if err != nil {
			t.Fatal(err)
		}
		j, _ := cell.Job(id)
		c.noteToken(j.Token)
		jobs = append(jobs, id)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		a, err := trySend(ctx, c.client, edge0.PublicURL, runner1711().requestJob(runnerTok, ""))
		if err != nil {
			t.Fatalf("jobs/request: %v", err)
		}
		return id, a, time.Since(start)
	}
	handedOut := func(t *testing.T, id uint64, a answer) {
		t.Helper()
		if a.status != http.StatusCreated {
			t.Fatalf("jobs/request for job %d: %d %s, want 201", id, a.status, redactTokens(a.body))
		}
		if got := decodeJob(t, a).ID; got != id {
			t.Errorf("the runner got job %d, want %d", got, id)
		}
		if j, _ := cell.Job(id); j.State != "running" {
			t.Errorf("job %d at the cell: %s, want running", id, j.State)
		}
	}
	rejected := func(t *testing.T, id uint64, a answer, ctl, reason string) {
		t.Helper()
		if a.status != http.StatusNoContent || len(a.body) != 0 {
			t.Fatalf("jobs/request for job %d: %d %s, want 204 and no job", id, a.status, redactTokens(a.body))
		}
		if got, want := a.header.Get("X-Gitlab-Last-Update"), cell.QueueValue(); got != want {
			t.Errorf("X-Gitlab-Last-Update: %q, want the cell's %q", got, want)
		}
		j, _ := cell.Job(id)
		if j.State != "failed" || j.FailureReason != "runner_system_failure" {
			t.Errorf("job %d at the cell: %s (%q), want failed (runner_system_failure)", id, j.State, j.FailureReason)
		}
		if tr := string(j.Trace); !strings.Contains(tr, fmt.Sprintf("controller %q", ctl)) || !strings.Contains(tr, reason) {
			t.Errorf("job %d's trace %q names neither controller %q nor %q", id, tr, ctl, reason)
		}
	}

	t.Run("enabled", func(t *testing.T) {
		policy.set("reject", "image alpine:3.20 is not allowed")
		id, a, _ := next(t)
		rejected(t, id, a, "policy", "image alpine:3.20 is not allowed")
		policy.set("admit", "")
		id, a, _ = next(t)
		handedOut(t, id, a)
	})

	t.Run("hanging controller", func(t *testing.T) {
		policy.set("hang", "") // on_error reject
		id, a, took := next(t)
		rejected(t, id, a, "policy", "")
		if took < policyTimeout || took > policyTimeout+5*time.Second {
			t.Errorf("the poll took %v, want about policy's timeout %v", took, policyTimeout)
		}
		poll.Until(t, 5*time.Second, "edge to cut the hanging call to policy", func() bool { _, cut := policy.snapshot(); return cut > 0 })
		policy.set("admit", "")
		incluster.set("hang", "") // on_error admit
		id, a, took = next(t)
		handedOut(t, id, a)
		if took < inclusterTimeout || took > inclusterTimeout+5*time.Second {
			t.Errorf("the poll took %v, want about incluster's timeout %v", took, inclusterTimeout)
		}
		incluster.set("admit", "")
	})

	t.Run("dry_run", func(t *testing.T) {
		b, err := os.ReadFile(edge0.ConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		dry := strings.Replace(string(b), "mode: enabled", "mode: dry_run", 1)
		if dry == string(b) || os.WriteFile(edge0.ConfigPath, []byte(dry), 0o600) != nil {
			t.Fatalf("could not switch to dry_run:\n%s", b)
		}
		edge0.cmd.Process.Signal(syscall.SIGHUP)
		poll.Until(t, 10*time.Second, "edge 0 to reload", func() bool {
			n, _ := metricSum(edge0.OpsURL+"/metrics", "edge_config_reloads_total", `result="ok"`)
			return n == 1
		})
		policy.set("reject", "dry")
		incluster.set("reject", "dry too")
		for range 2 {
			id, a, _ := next(t)
			handedOut(t, id, a)
		}
	})

	t.Run("what controllers saw", func(t *testing.T) {
		var secrets []string
		for _, id := range jobs {
			j, _ := cell.Job(id)
			secrets = append(secrets, j.Token, cellsim.SecretValue(id))
		}
		secrets = append(secrets, runnerTok, "gitlab-ci-token")
		for name, ctl := range map[string]*controller{"policy": policy, "incluster": incluster} {
			calls, _ := ctl.snapshot()
			var seen []uint64
			for _, call := range calls {
				for _, s := range secrets {
					if strings.Contains(string(call.body), s) || strings.Contains(call.auth, s) {
						t.Errorf("%s was sent a secret (%d characters): %s", name, len(s), redactTokens(call.body))
					}
				}
				var req admissionCall
				if err := json.Unmarshal(call.body, &req); err != nil {
					t.Fatalf("%s's call: %v: %s", name, err, call.body)
				}
				seen = append(seen, req.Job.ID)
				if req.Cell != 1 || req.Job.ProjectID != 1001 || req.Job.Project != "demo/demo" || req.Job.PipelineID != cellsim.PipelineID(req.Job.ID) ||
					req.Job.Image != "alpine:3.20" || !slices.Contains(req.Job.Variables, "DEPLOY_PASSWORD") ||
					req.Runner.Executor != "shell" || req.Runner.Capability == "" {
					t.Errorf("%s was asked about %+v", name, req)
				}
				if name == "incluster" {
					if call.auth != "" {
						t.Errorf("incluster (no secret_file) got Authorization %q", call.auth)
					}
					continue
				}
				tok, err := jwt.Parse(strings.TrimPrefix(call.auth, "Bearer "), func(*jwt.Token) (any, error) { return secret, nil },
					jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer("edge"), jwt.WithAudience("policy"), jwt.WithExpirationRequired())
				if err != nil {
					t.Errorf("policy's bearer: %v", err)
				} else if exp, _ := tok.Claims.GetExpirationTime(); exp.After(time.Now().Add(31 * time.Second)) {
					t.Errorf("policy's bearer expires at %v, more than 30 s away", exp)
				}
			}
			slices.Sort(seen)
			if !slices.Equal(seen, jobs) {
				t.Errorf("%s was asked about jobs %v, want each of %v once", name, seen, jobs)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		for _, m := range []struct {
			name, match string
			want        float64
		}{
			{"edge_admission_jobs_total", `mode="enabled",verdict="rejected"`, 2},
			{"edge_admission_jobs_total", `mode="dry_run",verdict="rejected"`, 2},
			{"edge_admission_jobs_total", `verdict="admitted"`, 2},
			{"edge_runner_polls_total", `answer="rejected"`, 2},
			{"edge_runner_polls_total", `answer="job"`, 4},
			{"edge_admission_errors_total", `controller="policy"`, 1},
			{"edge_admission_errors_total", `controller="incluster"`, 1},
		} {
			if got, err := metricSum(edge0.OpsURL+"/metrics", m.name, m.match); err != nil || got != m.want {
				t.Errorf("edge 0: %s{%s} = %v (%v), want %v", m.name, m.match, got, err, m.want)
			}
		}
	})
}
