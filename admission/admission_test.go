package admission

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A 201 job payload as a cell sends it, with everything that must not leave edge.
const jobPayload = `{"id":2000007,"token":"glcbt-SECRETJOBTOKEN","allow_git_fetch":true,
"job_info":{"id":2000007,"name":"rspec 1/4","stage":"test","project_id":42,"project_name":"shop"},
"git_info":{"repo_url":"https://gitlab-ci-token:glcbt-SECRETJOBTOKEN@gitlab.example.com/acme/shop.git","ref":"main","sha":"0123abcd","before_sha":"0000"},
"image":{"name":"ruby:3.3","entrypoint":null},"services":[{"name":"postgres:16"},{"name":"redis:7"}],
"variables":[{"key":"CI_PIPELINE_ID","value":"777","public":true},{"key":"DB_PASSWORD","value":"hunter2-SECRETVALUE","public":false,"masked":true},{"key":"CI_JOB_TOKEN","value":"glcbt-SECRETJOBTOKEN","public":false}],
"credentials":[{"type":"registry","url":"gitlab.example.com","username":"gitlab-ci-token","password":"glcbt-SECRETJOBTOKEN"}],
"steps":[{"name":"script","script":["echo SECRETSCRIPT"]}]}`

// What controllers are told holds the job's facts and variable names, and never its token,
// variable values, credentials, script or the repository URL's userinfo.
func TestFromPayloadTellsNoSecret(t *testing.T) {
	req, token, err := FromPayload(2, []byte(jobPayload), Runner{Executor: "docker", Platform: "linux", Architecture: "amd64", Version: "17.11.0", Capability: "c1a2"})
	if err != nil {
		t.Fatal(err)
	}
	if token != "glcbt-SECRETJOBTOKEN" {
		t.Errorf("token %q", token)
	}
	j := req.Job
	if j.ID != 2000007 || j.Name != "rspec 1/4" || j.Stage != "test" || j.ProjectID != 42 || j.ProjectPath != "acme/shop" ||
		j.PipelineID != 777 || j.Ref != "main" || j.SHA != "0123abcd" || j.Image != "ruby:3.3" || strings.Join(j.Services, ",") != "postgres:16,redis:7" ||
		strings.Join(j.Variables, ",") != "CI_PIPELINE_ID,DB_PASSWORD,CI_JOB_TOKEN" || req.Cell != 2 || req.Runner.Capability != "c1a2" {
		t.Errorf("request: %+v", req)
	}
	out, _ := json.Marshal(req)
	for _, secret := range []string{"SECRET", "hunter2", "gitlab-ci-token", "password"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("what a controller is told holds %q: %s", secret, out)
		}
	}
	for _, repo := range []string{"https://gitlab-ci-token:[MASKED]@gitlab.example.com/acme/shop.git", "https://gitlab.example.com/acme/shop", "https://a:b@c@gitlab.example.com:8443/acme/shop.git"} {
		p := strings.Replace(jobPayload, "https://gitlab-ci-token:glcbt-SECRETJOBTOKEN@gitlab.example.com/acme/shop.git", repo, 1)
		if req, _, err := FromPayload(2, []byte(p), Runner{}); err != nil || req.Job.ProjectPath != "acme/shop" {
			t.Errorf("repo %s: project path %q (%v)", repo, req.Job.ProjectPath, err)
		}
	}
	for _, bad := range []string{``, `{}`, `{"id":1}`, `[1]`, `{"id":"x","token":"t"}`} {
		if _, _, err := FromPayload(1, []byte(bad), Runner{}); err == nil {
			t.Errorf("FromPayload(%q): no error", bad)
		}
	}
}

// controller serves decide, recording what it was sent.
type controller struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // bodies
	auth []string
}

func newController(t *testing.T, decide func(w http.ResponseWriter)) *controller {
	c := &controller{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.seen = append(c.seen, string(b))
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.mu.Unlock()
		decide(w)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// received is what the controller was sent so far: bodies and Authorization headers.
func (c *controller) received() (bodies, auth []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...), append([]string(nil), c.auth...)
}

func answer(admitted bool, reason string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		json.NewEncoder(w).Encode(Decision{Admitted: admitted, Reason: reason})
	}
}

// All in scope must admit; the one that rejects says why; a controller out of scope is not
// asked; one that hangs is cut at its timeout and counts by on_error; they are asked in parallel.
func TestAsk(t *testing.T) {
	req, _, err := FromPayload(2, []byte(jobPayload), Runner{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	hang := func(w http.ResponseWriter) { <-release }
	yes, no, other := newController(t, answer(true, "")), newController(t, answer(false, "image ruby:3.3 is not allowed")), newController(t, answer(false, "never asked"))
	slow := newController(t, hang)
	ctl := func(name string, c *controller) *Controller {
		return &Controller{Name: name, URL: c.srv.URL, Timeout: 200 * time.Millisecond,
			Sign: func(aud string) (string, error) { return "signed-for-" + aud, nil }}
	}
	t.Run("all admit", func(t *testing.T) {
		v := Ask(context.Background(), []*Controller{ctl("a", yes), {Name: "scoped", URL: other.srv.URL, Cells: []uint64{3}}}, req)
		otherSeen, _ := other.received()
		if !v.Admitted || len(v.Results) != 1 || len(otherSeen) != 0 {
			t.Errorf("verdict %+v; out-of-scope controller asked %d times", v, len(otherSeen))
		}
		if _, auth := yes.received(); len(auth) != 1 || auth[0] != "Bearer signed-for-a" {
			t.Errorf("Authorization %q", auth)
		}
	})
	t.Run("one rejects", func(t *testing.T) {
		v := Ask(context.Background(), []*Controller{ctl("a", yes), ctl("policy", no)}, req)
		r, rejected := v.Rejection()
		if v.Admitted || !rejected || r.Controller != "policy" || r.Reason != "image ruby:3.3 is not allowed" {
			t.Errorf("verdict %+v", v)
		}
	})
	t.Run("hung controller cut at its timeout", func(t *testing.T) {
		for _, admit := range []bool{false, true} {
			h := ctl("slow", slow)
			h.AdmitOnError = admit
			start := time.Now()
			v := Ask(context.Background(), []*Controller{ctl("a", yes), h}, req)
			took := time.Since(start)
			if v.Admitted != admit || v.Results[1].Err == nil || took > 2*time.Second {
				t.Errorf("on_error admit=%v: verdict %+v after %v", admit, v, took)
			}
		}
	})
	var all []string
	for _, c := range []*controller{yes, no, slow} {
		bodies, _ := c.received()
		all = append(all, bodies...)
	}
	for _, body := range all {
		if strings.Contains(body, "SECRET") || strings.Contains(body, "hunter2") {
			t.Errorf("a controller received a secret: %s", body)
		}
	}
}
