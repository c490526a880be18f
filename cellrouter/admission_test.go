package cellrouter

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"gitlab.com/edge/edge/admission"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/internal/testkit/cellsim"
)

// testController answers every job with its decision (after hold), recording what it got.
type testController struct {
	srv      *httptest.Server
	mu       sync.Mutex
	received []string
}

func newTestController(t *testing.T, admitted bool, reason string, hold time.Duration) *testController {
	c := &testController{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.received = append(c.received, string(body))
		c.mu.Unlock()
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
			return
		}
		json.NewEncoder(w).Encode(admission.Decision{Admitted: admitted, Reason: reason})
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *testController) bodies() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.received...)
}

// admissionFixture is cell 2 played by cellsim behind the proxy, with admission configured.
type admissionFixture struct {
	*fixture
	sim     *cellsim.Cell
	token   string
	metrics *Metrics
}

func newAdmissionFixture(t *testing.T, a *Admission) *admissionFixture {
	sim, err := cellsim.New(cellsim.Options{CellID: 2, JobIDBase: 2000001})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f := &admissionFixture{sim: sim, token: routable(t, 2), metrics: m}
	sim.AcceptToken(f.token)
	f.fixture = newFixture(t, func(o *Options) { o.Admission, o.Metrics = a, m })
	f.cells[1].answer = sim.Handler().ServeHTTP
	return f
}

const runnerInfo = `"info":{"name":"r1","version":"17.11.0","executor":"docker","platform":"linux","architecture":"amd64","features":{"variables":true,"artifacts":true}}`

// poll asks for a job as gitlab-runner does and returns the answer.
func (f *admissionFixture) poll(t *testing.T) (*http.Response, []byte) {
	t.Helper()
	return do(t, newReq(t, "POST", f.front.URL+"/api/v4/jobs/request",
		strings.NewReader(`{"token":"`+f.token+`",`+runnerInfo+`}`), "Content-Type", "application/json"))
}

func (f *admissionFixture) addJob(t *testing.T) uint64 {
	t.Helper()
	id, err := f.sim.AddJob()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *admissionFixture) job(t *testing.T, id uint64) cellsim.Job {
	t.Helper()
	j, ok := f.sim.Job(id)
	if !ok {
		t.Fatalf("job %d unknown to the cell", id)
	}
	return j
}

func controllerAt(name string, c *testController, timeout time.Duration, admitOnError bool) *admission.Controller {
	return &admission.Controller{Name: name, URL: c.srv.URL + "/admit", Timeout: timeout, AdmitOnError: admitOnError}
}

// A rejected job is failed at its cell as a runner would fail it, with the controller's reason
// in its trace; the runner gets 204 and never sees it; the next job, admitted, reaches it whole.
func TestAdmissionRejectsAndFailsTheJob(t *testing.T) {
	yes := newTestController(t, true, "", 0)
	no := newTestController(t, false, "image alpine:3.20 is not allowed", 0)
	a := &Admission{Controllers: []*admission.Controller{controllerAt("quota", yes, time.Second, false), controllerAt("policy", no, time.Second, false)}}
	f := newAdmissionFixture(t, a)

	id := f.addJob(t)
	resp, body := f.poll(t)
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 || resp.Header.Get("X-Gitlab-Last-Update") == "" {
		t.Fatalf("rejected job: runner got %d %q (last update %q), want an empty 204 with the queue value", resp.StatusCode, body, resp.Header.Get("X-Gitlab-Last-Update"))
	}
	j := f.job(t, id)
	if j.State != "failed" || j.FailureReason != "runner_system_failure" || !strings.Contains(string(j.Trace), `controller "policy": image alpine:3.20 is not allowed`) {
		t.Errorf("job at the cell: state %q reason %q trace %q", j.State, j.FailureReason, j.Trace)
	}

	a.Controllers = a.Controllers[:1] // policy withdrawn; the proxy shares the slice's array
	id2 := f.addJob(t)
	resp, body = f.poll(t)
	var got struct {
		ID    uint64 `json:"id"`
		Token string `json:"token"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &got) != nil || got.ID != id2 || got.Token != f.job(t, id2).Token {
		t.Fatalf("admitted job: runner got %d %.80q", resp.StatusCode, body)
	}
	if st := f.job(t, id2).State; st != "running" {
		t.Errorf("admitted job state %q", st)
	}
	for _, b := range append(yes.bodies(), no.bodies()...) {
		for _, secret := range []string{f.job(t, id).Token, f.job(t, id2).Token, cellsim.SecretValue(id), cellsim.SecretValue(id2), f.token, "gitlab-ci-token"} {
			if strings.Contains(b, secret) {
				t.Errorf("a controller received %q: %s", secret, b)
			}
		}
		var req admission.Request
		if err := json.Unmarshal([]byte(b), &req); err != nil || req.Cell != 2 || req.Job.PipelineID != cellsim.PipelineID(req.Job.ID) ||
			req.Runner.Executor != "docker" || req.Runner.Capability == "" || !strings.Contains(strings.Join(req.Job.Variables, ","), "DEPLOY_PASSWORD") {
			t.Errorf("controller request %s (%v)", b, err)
		}
	}
	rejected := testutil.ToFloat64(f.metrics.signals.answered.WithLabelValues("2", admission.Capability("docker", "linux", "amd64", []string{"variables", "artifacts"}), "rejected"))
	if rejected != 1 || testutil.ToFloat64(f.metrics.admission.decisions.WithLabelValues("policy", "rejected")) != 1 ||
		testutil.ToFloat64(f.metrics.admission.failures.WithLabelValues("failed")) != 1 {
		t.Errorf("signals: rejected polls %v, policy rejections %v", rejected, testutil.ToFloat64(f.metrics.admission.decisions.WithLabelValues("policy", "rejected")))
	}
}

// dry_run hands out what a controller rejects, and counts it.
func TestAdmissionDryRun(t *testing.T) {
	no := newTestController(t, false, "over quota", 0)
	f := newAdmissionFixture(t, &Admission{DryRun: true, Controllers: []*admission.Controller{controllerAt("policy", no, time.Second, false)}})
	id := f.addJob(t)
	if resp, _ := f.poll(t); resp.StatusCode != http.StatusCreated {
		t.Fatalf("dry run: runner got %d", resp.StatusCode)
	}
	if j := f.job(t, id); j.State != "running" || len(j.Trace) != 0 {
		t.Errorf("dry run touched the job: %+v", j)
	}
	if n := testutil.ToFloat64(f.metrics.admission.jobs.WithLabelValues("2", "rejected", "dry_run")); n != 1 {
		t.Errorf("dry-run rejections counted %v", n)
	}
}

// A controller that hangs is cut at its timeout and counts as its on_error says.
func TestAdmissionHungController(t *testing.T) {
	for _, admit := range []bool{true, false} {
		t.Run(fmt.Sprint("on_error admit=", admit), func(t *testing.T) {
			hung := newTestController(t, true, "", time.Minute)
			f := newAdmissionFixture(t, &Admission{Controllers: []*admission.Controller{controllerAt("hung", hung, 200*time.Millisecond, admit)}})
			id := f.addJob(t)
			resp, _ := f.poll(t)
			want, state := http.StatusNoContent, "failed"
			if admit {
				want, state = http.StatusCreated, "running"
			}
			if j := f.job(t, id); resp.StatusCode != want || j.State != state {
				t.Errorf("runner got %d, job %s; want %d, %s", resp.StatusCode, j.State, want, state)
			}
			if n := testutil.ToFloat64(f.metrics.admission.errors.WithLabelValues("hung")); n != 1 {
				t.Errorf("errors counted %v", n)
			}
		})
	}
}

// A controller scoped to other cells is not asked; explain names those that are.
func TestAdmissionScopeAndExplain(t *testing.T) {
	no := newTestController(t, false, "never asked", 0)
	yes := newTestController(t, true, "", 0)
	a := &Admission{Controllers: []*admission.Controller{controllerAt("cell3-only", no, time.Second, false), controllerAt("all", yes, time.Second, false)}}
	a.Controllers[0].Cells = []uint64{3}
	f := newAdmissionFixture(t, a)
	f.addJob(t)
	if resp, _ := f.poll(t); resp.StatusCode != http.StatusCreated || len(no.bodies()) != 0 {
		t.Errorf("runner got %d; the out-of-scope controller was asked %d times", resp.StatusCode, len(no.bodies()))
	}
	edge := frontFor(t, f.proxy, front.Options{}, nil)
	req := httptest.NewRequest("POST", "/api/v4/jobs/request", strings.NewReader(`{"token":"`+f.token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	out, _ := json.Marshal(edge.Explain(req))
	if !strings.Contains(string(out), `"admission":{"controllers":["all"],"mode":"enabled"}`) {
		t.Errorf("explain: %s", out)
	}
}

// A job too large to hold cannot be asked about, nor slip past the controllers: each counts as
// failed, by its on_error.
func TestAdmissionJobTooLarge(t *testing.T) {
	big := `{"id":2000099,"token":"glcbt-big","variables":[{"key":"K","value":"` + strings.Repeat("v", maxJobAnswer) + `"}]}`
	for _, admit := range []bool{false, true} {
		t.Run(fmt.Sprint("on_error admit=", admit), func(t *testing.T) {
			ctl := newTestController(t, true, "", 0)
			f := newFixture(t, func(o *Options) {
				o.Admission = &Admission{Controllers: []*admission.Controller{controllerAt("policy", ctl, time.Second, admit)}}
			})
			f.cells[1].answer = func(w http.ResponseWriter, r *http.Request) {
				switch r.Method {
				case http.MethodPost:
					w.WriteHeader(http.StatusCreated)
					io.WriteString(w, big)
				case http.MethodPatch:
					w.WriteHeader(http.StatusAccepted)
				}
			}
			resp, body := do(t, newReq(t, "POST", f.front.URL+"/api/v4/jobs/request", nil, "Runner-Token", routable(t, 2)))
			var calls []string
			for _, s := range f.cells[1].requests() {
				calls = append(calls, s.method+" "+s.path+" "+s.header.Get("Job-Token"))
			}
			if admit {
				if resp.StatusCode != http.StatusCreated || string(body) != big || len(calls) != 1 {
					t.Errorf("runner got %d, %d bytes; cell calls %q", resp.StatusCode, len(body), calls)
				}
				return
			}
			want := "POST /api/v4/jobs/request |PATCH /api/v4/jobs/2000099/trace glcbt-big|PUT /api/v4/jobs/2000099 glcbt-big"
			if resp.StatusCode != http.StatusNoContent || strings.Join(calls, "|") != want {
				t.Errorf("runner got %d; cell calls %q", resp.StatusCode, calls)
			}
			if len(ctl.bodies()) != 0 {
				t.Error("the controller was asked about a job edge did not read")
			}
		})
	}
}
