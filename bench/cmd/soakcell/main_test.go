package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gitlab.com/edge/edge/bench"
	"gitlab.com/edge/edge/internal/testkit/cellsim"
)

func do(t *testing.T, h http.Handler, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// A cell killed after handing a job out restores it as running: it is never handed out again,
// the runner's token still works, and the ledger names the request that got it.
func TestLedgerSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cell.ledger")
	opts := cellsim.Options{CellID: 2}
	c, _, _, err := open(opts, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var random [16]byte
	runner, err := bench.MintRoutable("glrt-t1_", random, map[string]int64{"c": 2, "o": 1})
	if err != nil {
		t.Fatal(err)
	}
	if w := do(t, c.controlHandler(), "POST", "/jobs", `{"ids":[2000001,2000002]}`, nil); w.Code != 200 {
		t.Fatalf("queue: %d %s", w.Code, w.Body)
	}
	poll := `{"token":"` + runner + `"}`
	w := do(t, c.handler(), "POST", "/api/v4/jobs/request", poll, map[string]string{bench.RequestIDHeader: "req-1"})
	if w.Code != 201 || w.Header().Get(CellHeader) != "2" {
		t.Fatalf("job request: %d, cell header %q", w.Code, w.Header().Get(CellHeader))
	}
	var job struct {
		ID    uint64 `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &job); err != nil || job.ID != 2000001 {
		t.Fatalf("job: %s %v", w.Body, err)
	}
	c.ledger.Close() // kill -9: nothing more is written

	c2, restored, pending, err := open(opts, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.ledger.Close()
	if restored != 2 || pending != 1 {
		t.Errorf("restored %d jobs, %d pending; want 2, 1", restored, pending)
	}
	w = do(t, c2.handler(), "POST", "/api/v4/jobs/request", poll, map[string]string{bench.RequestIDHeader: "req-2"})
	if !strings.Contains(w.Body.String(), `"id":2000002`) {
		t.Errorf("after the restart: %d %s, want job 2000002 (2000001 was handed out)", w.Code, w.Body)
	}
	w = do(t, c2.handler(), "PUT", "/api/v4/jobs/2000001", `{"token":"`+job.Token+`","state":"success"}`, map[string]string{bench.RequestIDHeader: "req-3"})
	if w.Code != 200 || w.Header().Get("Job-Status") != "success" {
		t.Errorf("PUT with the old token: %d %q", w.Code, w.Header().Get("Job-Status"))
	}
	f, _ := os.Open(path)
	defer f.Close()
	l, err := bench.ReadLedger(f)
	if err != nil {
		t.Fatal(err)
	}
	j1 := l.Jobs[2000001]
	if len(j1.Claims) != 1 || j1.Claims[0].Req != "req-1" || j1.State != "success" || len(l.Starts) != 2 {
		t.Errorf("ledger: job 1 %+v, starts %d", j1, len(l.Starts))
	}
	if j2 := l.Jobs[2000002]; len(j2.Claims) != 1 || j2.Claims[0].Incarnation != 1 {
		t.Errorf("ledger: job 2 %+v", j2)
	}
	if l.Seen["req-1"] != 1 || l.Seen["req-3"] != 1 {
		t.Errorf("seen: %v", l.Seen)
	}
	w = do(t, c2.controlHandler(), "GET", "/stats", "", nil)
	b, _ := io.ReadAll(w.Body)
	if !strings.Contains(string(b), `"pending":0,"running":1,"finished":1`) {
		t.Errorf("stats: %s", b)
	}
}

// POST /cut: the next 201 to a job request held long enough is cut mid-body (the head with the
// whole body's Content-Length, half the body) and the process exits; the ledger has the claim
// and the cut, and a restarted cell never hands the job out again.
func TestCutAnswer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cell.ledger")
	opts := cellsim.Options{CellID: 2}
	c, _, _, err := open(opts, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	exits := []int{}
	c.exit = func(code int) { exits = append(exits, code) }
	var random [16]byte
	runner, err := bench.MintRoutable("glrt-t1_", random, map[string]int64{"c": 2, "o": 1})
	if err != nil {
		t.Fatal(err)
	}
	poll := `{"token":"` + runner + `"}`
	if w := do(t, c.controlHandler(), "POST", "/jobs", `{"ids":[2000001,2000002,2000003]}`, nil); w.Code != 200 {
		t.Fatalf("queue: %d %s", w.Code, w.Body)
	}
	if w := do(t, c.controlHandler(), "POST", "/cut", `{"held_ms":-1}`, nil); w.Code != 400 {
		t.Errorf("POST /cut held_ms -1: %d, want 400", w.Code)
	}
	// Armed for polls held 10 minutes: this one, answered at once, is not cut.
	if w := do(t, c.controlHandler(), "POST", "/cut", `{"held_ms":600000}`, nil); w.Code != 200 {
		t.Fatalf("POST /cut: %d %s", w.Code, w.Body)
	}
	w := do(t, c.handler(), "POST", "/api/v4/jobs/request", poll, map[string]string{bench.RequestIDHeader: "req-1"})
	if w.Code != 201 || len(exits) != 0 || !strings.HasSuffix(w.Body.String(), "}") {
		t.Fatalf("a poll not held long enough: %d, exits %v, body %q", w.Code, exits, w.Body)
	}
	if w := do(t, c.controlHandler(), "POST", "/cut", `{"held_ms":0}`, nil); w.Code != 200 {
		t.Fatalf("POST /cut: %d %s", w.Code, w.Body)
	}
	w = do(t, c.handler(), "POST", "/api/v4/jobs/request", poll, map[string]string{bench.RequestIDHeader: "req-2"})
	full, _ := strconv.Atoi(w.Header().Get("Content-Length"))
	if w.Code != 201 || full == 0 || w.Body.Len() != full/2 || !w.Flushed {
		t.Errorf("cut answer: %d, Content-Length %d, %d bytes of body, flushed %v; want 201, n, n/2, true", w.Code, full, w.Body.Len(), w.Flushed)
	}
	if len(exits) != 1 || exits[0] != exitCut {
		t.Errorf("exits %v, want [%d]", exits, exitCut)
	}
	// Disarmed by the cut: the next answer is whole.
	w = do(t, c.handler(), "POST", "/api/v4/jobs/request", poll, map[string]string{bench.RequestIDHeader: "req-3"})
	if w.Code != 201 || len(exits) != 1 || !strings.Contains(w.Body.String(), `"id":2000003`) {
		t.Errorf("after the cut: %d %q, exits %v", w.Code, w.Body, exits)
	}
	c.ledger.Close()

	f, _ := os.Open(path)
	defer f.Close()
	l, err := bench.ReadLedger(f)
	if err != nil {
		t.Fatal(err)
	}
	j2 := l.Jobs[2000002]
	if len(j2.Claims) != 1 || j2.Claims[0].Req != "req-2" || !j2.Claims[0].Cut || l.Jobs[2000001].Claims[0].Cut {
		t.Errorf("ledger: job 2 %+v, job 1 %+v", j2, l.Jobs[2000001])
	}
	c2, restored, pending, err := open(opts, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.ledger.Close()
	if restored != 3 || pending != 0 {
		t.Errorf("restored %d jobs, %d pending; want 3, 0 (the cut job stays running)", restored, pending)
	}
}
