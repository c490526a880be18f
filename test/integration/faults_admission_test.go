package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// admissionRig is an edge whose one cell and two admission controllers are fault upstreams:
// the cell hands out job N to a runner whose jobs/request says X-Job: N, and learns from the
// path which job edge fails (PATCH .../jobs/N/trace, PUT .../jobs/N); the controllers learn the
// job from the body edge sends them. strict fails closed (on_error: reject), lenient open.
type admissionRig struct {
	cell, ctl             *faultUpstream
	cellFaults, ctlFaults caseFaults
	e                     *edgeProc
	procs                 procSet // the edge
	mu                    sync.Mutex
	calls                 map[string]string // the body of the last trace or state call of a job ("trace:N")
	job                   int
}

// admissionBackoff is the Failer's policy: the pause before each retry of a call to a cell.
var admissionBackoff = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// controllerTimeout is short, as a stall waits it out, but well above a controller's time on a
// busy machine (a call that times out would reject a job the case expects handed out).
const controllerTimeout = time.Second

func newAdmissionRig(t *testing.T) *admissionRig {
	a := &admissionRig{calls: map[string]string{}, job: 1000}
	a.cell = newFaultUpstream(t, a.cellPlan)
	a.ctl = newFaultUpstream(t, a.controllerPlan)
	a.e = startEdge(t, edgeConfig{
		Cells:   []cellConfig{{ID: 1, URL: a.cell.url(), Legacy: true}},
		Routing: routingConfig{LongPollTimeout: "2s", UpstreamTimeout: "1s"},
		Runners: &runnersConfig{Admission: &admissionConfig{Mode: "enabled", Controllers: []controllerConfig{
			{Name: "strict", URL: a.ctl.url() + "/strict", Timeout: controllerTimeout.String(), OnError: "reject"},
			{Name: "lenient", URL: a.ctl.url() + "/lenient", Timeout: controllerTimeout.String(), OnError: "admit"},
		}}},
	})
	a.procs = procSet{watchEdge(a.e)}
	return a
}

func jobPayload(job string) string {
	return `{"id":` + job + `,"token":"faults-job-token-` + job + `","job_info":{"name":"fault ` + job + `","stage":"test","project_id":7},` +
		`"git_info":{"repo_url":"https://gitlab-ci-token:x@gitlab.example/faults.git","ref":"main","sha":"0123abcd"},` +
		`"image":{"name":"alpine:3.20"},"variables":[{"key":"FAULTS_SECRET","value":"hush","public":false}]}`
}

func (a *admissionRig) cellPlan(req *http.Request, body []byte) faultPlan {
	path := req.URL.Path
	if req.Method == http.MethodPost && path == "/api/v4/jobs/request" {
		job := req.Header.Get("X-Job")
		return faultPlan{id: "request:" + job, status: "201 Created", header: "X-Gitlab-Last-Update: lu-" + job + "\r\n", body: jobPayload(job)}
	}
	job, _ := strings.CutPrefix(path, "/api/v4/jobs/")
	id, status := "state:"+job, "200 OK"
	if job, ok := strings.CutSuffix(job, "/trace"); ok && req.Method == http.MethodPatch {
		id, status = "trace:"+job, "202 Accepted"
	}
	a.mu.Lock()
	a.calls[id] = string(body)
	a.mu.Unlock()
	c := a.cellFaults.get(id, a.cell.count(id))
	p := faultPlan{id: id, fault: c.fault, hold: c.hold, status: status, body: `{"case":"` + id + `"}`}
	if c.status != "" {
		p.status, p.header = c.status, c.header
	}
	return p
}

func (a *admissionRig) controllerPlan(req *http.Request, body []byte) faultPlan {
	var call struct {
		Job struct {
			ID uint64 `json:"id"`
		} `json:"job"`
	}
	json.Unmarshal(body, &call)
	id := strings.TrimPrefix(req.URL.Path, "/") + ":" + strconv.FormatUint(call.Job.ID, 10)
	c := a.ctlFaults.get(id, a.ctl.count(id))
	verdict := `{"admitted":true,"reason":""}`
	if c.form == "reject" {
		verdict = `{"admitted":false,"reason":"the fault matrix says no"}`
	}
	return faultPlan{id: id, fault: c.fault, hold: c.hold, body: verdict}
}

func (a *admissionRig) call(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[id]
}

func (a *admissionRig) nextJob() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.job++
	return strconv.Itoa(a.job)
}

// poll is a runner's jobs/request for job, by hand, on a new connection: what it got (it may
// run on a goroutine of its own).
func (a *admissionRig) poll(t *testing.T, job string, patience time.Duration) clientResult {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.e.PublicURL, "http://"))
	if err != nil {
		t.Errorf("dial edge: %v", err)
		return clientResult{}
	}
	defer conn.Close()
	body := `{"token":"glrt-faults-legacy-runner","last_update":"x","info":{"executor":"shell","platform":"linux","architecture":"amd64","version":"17.11.0"}}`
	fmt.Fprintf(conn, "POST /api/v4/jobs/request HTTP/1.1\r\nHost: edge.test\r\nUser-Agent: gitlab-runner 17.11.0 (faults)\r\n"+
		"X-Job: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", job, len(body), body)
	return readAnswer(conn, bufio.NewReader(conn), patience)
}

// handedOut: the runner got the cell's answer byte for byte.
func (a *admissionRig) handedOut(t *testing.T, job string, r clientResult) {
	t.Helper()
	if r.status != http.StatusCreated || r.bodyErr != nil || r.body != jobPayload(job) {
		t.Errorf("runner got %d %q (%v), want 201 and job %s as the cell sent it; edge's lines on it:\n%s", r.status, r.body, r.bodyErr, job, a.linesOf(job))
	}
}

// turnedAway: the runner got 204 with the cell's X-Gitlab-Last-Update and no job.
func (a *admissionRig) turnedAway(t *testing.T, job string, r clientResult) {
	t.Helper()
	if r.status != http.StatusNoContent || r.body != "" || r.header.Get("X-Gitlab-Last-Update") != "lu-"+job {
		t.Errorf("runner got %d %v %q, want 204 with the cell's X-Gitlab-Last-Update lu-%s and no job; edge's lines on it:\n%s", r.status, r.header, r.body, job, a.linesOf(job))
	}
}

func (a *admissionRig) linesOf(job string) string {
	var out []string
	for _, line := range strings.Split(a.e.out.String(), "\n") {
		if strings.Contains(line, "job_id="+job+" ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// controls: a job no one faults on is handed out, and one strict rejects is failed at its cell
// (the cell's answers whole) and turned away: through every connection pool edge has (the cell's
// jobs/request and call pools, the controllers').
func (a *admissionRig) controls(t *testing.T) {
	t.Helper()
	job := a.nextJob()
	a.handedOut(t, job, a.poll(t, job, 5*time.Second))
	job = a.nextJob()
	a.ctlFaults.set("strict:"+job, caseFault{form: "reject"})
	a.turnedAway(t, job, a.poll(t, job, 5*time.Second))
}

// settle follows a case: controls on the connections the case left (an answer's extra bytes
// must not become theirs); then, the upstreams' connections closed, controls again, which find
// edge's idle connections to the cell closed and drop them (edge's inline transport checks an
// idle connection when it takes it, not before: until then a pool holds the closed ones);
// nothing held at the cell or the controllers; their idle connections closed, edge back to what
// it held before the case (the slack of procSet.settled: the pools' two connections last used).
func (a *admissionRig) settle(t *testing.T, before []procState) {
	t.Helper()
	a.controls(t)
	a.cell.closeConns()
	a.ctl.closeConns()
	a.controls(t)
	poll.UntilState(t, 2*time.Second, "the cell's and the controllers' connections released", func() (bool, string) {
		c, k := a.cell.busy(), a.ctl.busy()
		return c == 0 && k == 0, fmt.Sprintf("cell %d held, controllers %d", c, k)
	})
	a.cell.closeConns()
	a.ctl.closeConns()
	a.procs.settled(t, before)
}

// TestFaultMatrixAdmission: (a) every upstream fault of an admission controller, for a controller
// that fails closed and one that fails open: its on_error decides (the job failed at its cell
// and the runner turned away with 204, or the runner given the job), the controller asked once
// per job, a log line naming the controller's failure and the job; (b) every upstream fault and
// the error statuses of the cell, on the calls that fail a rejected job there (the trace PATCH,
// the PUT state=failed), once and for good: retried as the Failer's policy says (network errors,
// 5xx and 429, with its back-off, never more; a 403 with Job-Status ends it), the runner turned
// away, a log line with the job id. Every case: edge alive, no goroutine or file left, a job no
// one faults on handed out after it.
func TestFaultMatrixAdmission(t *testing.T) {
	start := time.Now()
	a := newAdmissionRig(t)
	a.controls(t)
	controllerCases := 0
	for _, ctl := range []string{"strict", "lenient"} {
		for _, up := range upstreamFaults {
			controllerCases++
			t.Run("controller/"+ctl+"/"+up, func(t *testing.T) { a.runController(t, ctl, up) })
		}
	}
	t.Logf("controller faults: %d cases in %v", controllerCases, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	cellCases := a.runCellCalls(t)
	t.Logf("faults of the cell's calls: %d cases (at once) in %v", cellCases, time.Since(start).Round(time.Millisecond))
}

// answered: the controller's fault leaves a whole answer (its verdict stands).
func answered(up string) bool { return up == upNone || up == upExtraBytes }

func (a *admissionRig) runController(t *testing.T, ctl, up string) {
	job := a.nextJob()
	a.cell.closeConns()
	a.ctl.closeConns()
	before, marks := a.procs.state(t), a.procs.marks()
	a.ctlFaults.set(ctl+":"+job, caseFault{fault: up})
	r := a.poll(t, job, 5*time.Second)
	rejected := !answered(up) && ctl == "strict"
	if rejected {
		a.turnedAway(t, job, r)
	} else {
		a.handedOut(t, job, r)
	}
	a.procs.alive(t)
	for _, id := range []string{"strict:" + job, "lenient:" + job, "request:" + job} {
		if n := a.ctl.count(id) + a.cell.count(id); n != 1 {
			t.Errorf("%s: %d requests, want 1", id, n)
		}
	}
	if n, m := a.cell.count("trace:"+job), a.cell.count("state:"+job); rejected != (n == 1 && m == 1) || n > 1 || m > 1 {
		t.Errorf("the cell was asked to fail job %s %d+%d times, want %v", job, n, m, rejected)
	}
	if tr := a.call("trace:" + job); rejected && !strings.Contains(tr, `controller "strict"`) {
		t.Errorf("job %s's trace line %q does not name strict", job, tr)
	}
	if st := a.call("state:" + job); rejected && !strings.Contains(st, `"state":"failed"`) {
		t.Errorf("job %s's state call %q does not fail it", job, st)
	}
	a.settle(t, before)
	if !answered(up) {
		logHas(t, a.e.process, marks[0], `msg="admission controller failed"`, "controller="+ctl+" ", "job_id="+job+" ", "error=")
	}
	if rejected {
		logHas(t, a.e.process, marks[0], `msg="admission rejected a job"`, "job_id="+job+" ", "controller=strict ")
	}
}

// cellStatuses are the cell's error answers to the calls that fail a job, and whether the
// Failer's policy retries them.
var cellStatuses = []struct {
	name, status, header string
	retried, ended       bool // ended: the job ended already, nothing more to do
}{
	{name: "500", status: "500 Internal Server Error", retried: true},
	{name: "503", status: "503 Service Unavailable", retried: true},
	{name: "429", status: "429 Too Many Requests", header: "Retry-After: 1\r\n", retried: true},
	{name: "403-job-status", status: "403 Forbidden", header: "Job-Status: failed\r\n", ended: true},
	{name: "403", status: "403 Forbidden"},
	{name: "404", status: "404 Not Found"},
}

// retriedFault: a fault before the answer's status was whole is a network error to the
// Failer, retried; once the status is read, a cut body does not undo it.
func retriedFault(up string) bool {
	switch up {
	case upCloseStatus, upResetStatus, upCloseHeaders, upResetHeaders, upStall, upInterimClose:
		return true
	}
	return false
}

// cellCase is one fault of the cell on one call (trace or state), once or for good.
type cellCase struct {
	name, call string
	fault      caseFault
	attempts   int  // the calls the policy makes
	gaveUp     bool // the Failer returns an error, logged with the job id
	retried    bool
}

func cellCases() []cellCase {
	var out []cellCase
	for _, call := range []string{"trace", "state"} {
		for _, up := range upstreamFaults {
			for _, once := range []bool{true, false} {
				c := cellCase{call: call, fault: caseFault{fault: up, once: once}, attempts: 1, retried: retriedFault(up)}
				c.name = call + "/" + up + "/always"
				if once {
					c.name = call + "/" + up + "/once"
				}
				if c.retried {
					c.attempts, c.gaveUp = 2, !once
					if !once {
						c.attempts = 1 + len(admissionBackoff)
					}
				}
				if up == upNone && !once {
					continue
				}
				out = append(out, c)
			}
		}
		for _, s := range cellStatuses {
			c := cellCase{name: call + "/" + s.name, call: call, fault: caseFault{status: s.status, header: s.header, fault: upNone}, attempts: 1, retried: s.retried, gaveUp: !s.ended}
			if s.retried {
				c.attempts = 1 + len(admissionBackoff)
			}
			out = append(out, c)
		}
	}
	return out
}

// runCellCalls runs every cell case at once (a retried one waits out the back-off, 7.75 s; t.Parallel
// would run two at a time): strict rejects each job, and the cell faults on its case's call. The
// runners poll together; each case is judged once all have their answers. The leak check is the
// batch's.
func (a *admissionRig) runCellCalls(t *testing.T) int {
	cases := cellCases()
	a.cell.closeConns()
	a.ctl.closeConns()
	before, marks := a.procs.state(t), a.procs.marks()
	jobs := make([]string, len(cases))
	got := make([]clientResult, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		jobs[i] = a.nextJob()
		a.ctlFaults.set("strict:"+jobs[i], caseFault{form: "reject"})
		a.cellFaults.set(c.call+":"+jobs[i], c.fault)
		wg.Go(func() { got[i] = a.poll(t, jobs[i], 30*time.Second) })
	}
	wg.Wait()
	for i, c := range cases {
		t.Run("cell/"+c.name, func(t *testing.T) { a.judgeCellCall(t, c, jobs[i], got[i], marks[0]) })
	}
	a.procs.alive(t)
	a.settle(t, before)
	return len(cases)
}

func (a *admissionRig) judgeCellCall(t *testing.T, c cellCase, job string, r clientResult, mark int) {
	a.turnedAway(t, job, r)
	other := map[string]string{"trace": "state", "state": "trace"}[c.call]
	at := a.cell.times(c.call + ":" + job)
	if len(at) != c.attempts {
		t.Errorf("the cell got the %s call %d times, want %d", c.call, len(at), c.attempts)
	}
	if n := a.cell.count(other + ":" + job); n != 1 {
		t.Errorf("the cell got the %s call %d times, want 1", other, n)
	}
	for i := 1; i < len(at) && i <= len(admissionBackoff); i++ {
		if gap := at[i].Sub(at[i-1]); gap < admissionBackoff[i-1]-20*time.Millisecond {
			t.Errorf("attempt %d came %v after the one before, want at least the back-off %v", i+1, gap, admissionBackoff[i-1])
		}
	}
	if tr := a.call("trace:" + job); !strings.Contains(tr, "strict") || !strings.Contains(tr, "the fault matrix says no") {
		t.Errorf("job %s's trace line %q names neither the controller nor its reason", job, tr)
	}
	if st := a.call("state:" + job); !strings.Contains(st, `"state":"failed"`) || !strings.Contains(st, "runner_system_failure") {
		t.Errorf("job %s's state call %q does not fail it", job, st)
	}
	if n := a.ctl.count("strict:" + job); n != 1 {
		t.Errorf("strict was asked about job %s %d times, want once", job, n)
	}
	edge := a.e.process
	logHas(t, edge, mark, `msg="admission rejected a job"`, "job_id="+job+" ")
	gaveUp := `msg="admission: could not fail a rejected job at its cell; it was not handed out"`
	if c.gaveUp {
		logHas(t, edge, mark, gaveUp, "job_id="+job+" ", "error=")
	} else if out := edge.out.String(); slices.ContainsFunc(strings.Split(out[mark:], "\n"), func(l string) bool {
		return strings.Contains(l, gaveUp) && strings.Contains(l, "job_id="+job+" ")
	}) {
		t.Errorf("edge gave up on failing job %s, want it failed", job)
	}
}
