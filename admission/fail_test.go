package admission

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// jobCell plays a cell's two job endpoints; answers gives the status of each call in turn.
type jobCell struct {
	mu      sync.Mutex
	calls   []string
	trace   string
	state   string
	answers map[string][]int
}

func (c *jobCell) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	key := r.Method
	c.calls = append(c.calls, fmt.Sprintf("%s %s %s token=%s", r.Method, r.URL.Path, r.Header.Get("Content-Range"), r.Header.Get("Job-Token")))
	if q := c.answers[key]; len(q) > 0 {
		c.answers[key] = q[1:]
		if q[0] == http.StatusRequestedRangeNotSatisfiable {
			w.Header().Set("Range", fmt.Sprintf("0-%d", len(c.trace)))
		}
		if q[0] == http.StatusForbidden {
			w.Header().Set("Job-Status", "canceled")
		}
		w.WriteHeader(q[0])
		return
	}
	switch r.Method {
	case http.MethodPatch:
		c.trace += string(body)
		w.WriteHeader(http.StatusAccepted)
	case http.MethodPut:
		c.state = string(body)
	}
}

func failAt(t *testing.T, c *jobCell) error {
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/gitlab")
	f := &Failer{Transport: http.DefaultTransport, Backoff: []time.Duration{time.Millisecond, time.Millisecond}}
	return f.Fail(context.Background(), base, 42, "glcbt-job", "rejected by policy\n")
}

func TestFailJob(t *testing.T) {
	t.Run("as a runner would", func(t *testing.T) {
		c := &jobCell{}
		if err := failAt(t, c); err != nil {
			t.Fatal(err)
		}
		want := []string{"PATCH /gitlab/api/v4/jobs/42/trace 0-18 token=glcbt-job", "PUT /gitlab/api/v4/jobs/42  token=glcbt-job"}
		if strings.Join(c.calls, "\n") != strings.Join(want, "\n") || c.trace != "rejected by policy\n" ||
			c.state != `{"exit_code":1,"failure_reason":"runner_system_failure","state":"failed","token":"glcbt-job"}` {
			t.Errorf("calls %q trace %q state %s", c.calls, c.trace, c.state)
		}
	})
	t.Run("retried after 5xx, continued after 416", func(t *testing.T) {
		c := &jobCell{trace: "earlier\n", answers: map[string][]int{"PATCH": {502, 416}, "PUT": {503}}}
		if err := failAt(t, c); err != nil {
			t.Fatal(err)
		}
		if len(c.calls) != 5 || !strings.Contains(c.calls[2], " 8-26 ") || c.trace != "earlier\nrejected by policy\n" || !strings.Contains(c.state, "failed") {
			t.Errorf("calls %q trace %q state %q", c.calls, c.trace, c.state)
		}
	})
	t.Run("a job that ended is left alone", func(t *testing.T) {
		c := &jobCell{answers: map[string][]int{"PATCH": {403}, "PUT": {403}}}
		if err := failAt(t, c); err != nil || len(c.calls) != 2 {
			t.Errorf("err %v, calls %q", err, c.calls)
		}
	})
	t.Run("gives up after its retries, with an error", func(t *testing.T) {
		c := &jobCell{answers: map[string][]int{"PUT": {500, 500, 500, 500}}}
		if err := failAt(t, c); err == nil || len(c.calls) != 4 {
			t.Errorf("err %v, calls %q", err, c.calls)
		}
	})
	t.Run("a refusal is not retried", func(t *testing.T) {
		c := &jobCell{answers: map[string][]int{"PUT": {401}}}
		if err := failAt(t, c); err == nil || len(c.calls) != 2 {
			t.Errorf("err %v, calls %q", err, c.calls)
		}
	})
}

func TestRunnerOf(t *testing.T) {
	r := RunnerOf([]byte(`{"token":"glrt-x","info":{"executor":"docker","platform":"linux","architecture":"arm64","version":"17.11.0","features":{"cache":true,"shared":false,"variables":true}}}`))
	if r.Executor != "docker" || r.Architecture != "arm64" || r.Version != "17.11.0" || r.Capability != Capability("docker", "linux", "arm64", []string{"variables", "cache"}) {
		t.Errorf("runner %+v", r)
	}
	for _, bad := range []string{"", "not json", `{"info":7}`} {
		if r := RunnerOf([]byte(bad)); r.Capability != Unknown {
			t.Errorf("RunnerOf(%q) = %+v", bad, r)
		}
	}
}
