package cellsim_test

import (
	"encoding/json"
	"errors"
	"testing"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
)

// A restarted cell restores its jobs: the pending one is handed out, the running and finished
// ones are not, and their old tokens still work for the job calls.
func TestRestoreJob(t *testing.T) {
	cell, srv := newCell(t, cellsim.Options{CellID: 2})
	runner := routable(t, cellKeys(2))
	for _, j := range []cellsim.Job{
		{ID: 10, Token: "glcbt-running", State: "running", Trace: []byte("abc")},
		{ID: 11, Token: "glcbt-pending", State: "pending"},
		{ID: 12, Token: "glcbt-done", State: "success"},
	} {
		if err := cell.RestoreJob(j); err != nil {
			t.Fatalf("RestoreJob(%d): %v", j.ID, err)
		}
	}
	if err := cell.RestoreJob(cellsim.Job{ID: 11, Token: "x"}); !errors.Is(err, cellsim.ErrJobExists) {
		t.Errorf("restoring job 11 twice: got %v, want ErrJobExists", err)
	}
	req := call{method: "POST", path: "/api/v4/jobs/request", body: `{"token":"` + runner + `"}`}
	res, body := do(t, srv, req)
	if res.StatusCode != 201 {
		t.Fatalf("job request: got %d, want 201", res.StatusCode)
	}
	var got struct {
		ID    uint64 `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &got); err != nil || got.ID != 11 || got.Token != "glcbt-pending" {
		t.Fatalf("handed out %s (%v), want job 11 with its old token", body, err)
	}
	if res, _ := do(t, srv, req); res.StatusCode != 204 {
		t.Errorf("second job request: got %d, want 204 (running and finished jobs are not handed out)", res.StatusCode)
	}
	res, _ = do(t, srv, call{method: "PUT", path: "/api/v4/jobs/10", body: `{"token":"glcbt-running","state":"success"}`})
	if res.StatusCode != 200 || res.Header.Get("Job-Status") != "success" {
		t.Errorf("PUT job 10 with its old token: got %d %q, want 200 success", res.StatusCode, res.Header.Get("Job-Status"))
	}
	if j, _ := cell.Job(10); string(j.Trace) != "abc" {
		t.Errorf("job 10's trace: got %q, want the restored abc", j.Trace)
	}
	if id, err := cell.AddJob(); err != nil || id <= 12 {
		t.Errorf("AddJob after restoring: got %d, %v; want an id after the restored ones", id, err)
	}
}
