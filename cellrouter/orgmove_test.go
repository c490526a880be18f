package cellrouter

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/tokens"
)

// A runner's token follows its organization's move: to the new cell once switched, whatever
// cell the token names; held back while frozen (jobs/request 204, other runner calls 503
// organization_moving, both with Retry-After, no cell asked); job traffic keeps going where the
// job runs.
func TestRoutingFollowsOrganizationMoves(t *testing.T) {
	table := moves.NewTable(moves.NewMemory(), nil, nil)
	key, verifier := newES256(t)
	f := newFixture(t, func(o *Options) { o.Moves, o.Verifier = table, verifier })
	keys := tokens.Keys{}.Set(tokens.KeyOrganization, 7).Set(tokens.KeyCell, 2)
	runner, err := tokens.MintRoutable("glrt-t2_", [16]byte{7}, keys)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := tokens.MintRoutable("glrt-t2_", [16]byte{8}, tokens.Keys{}.Set(tokens.KeyOrganization, 8).Set(tokens.KeyCell, 2))
	call := func(method, path, token string) (*http.Response, string) {
		req, _ := http.NewRequest(method, f.front.URL+path, strings.NewReader(`{"token":"`+token+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, body := do(t, req)
		return resp, string(body)
	}
	reset := func() {
		for _, c := range f.cells {
			c.mu.Lock()
			c.seen = nil
			c.mu.Unlock()
		}
	}
	known := func(uint64) bool { return true }

	call("POST", "/api/v4/runners/verify", runner)
	f.only(t, 2) // no move: the token's cell

	reset()
	if _, err := table.Set(context.Background(), 7, 3, moves.Freeze, known); err != nil {
		t.Fatal(err)
	}
	resp, body := call("POST", "/api/v4/jobs/request", runner)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Retry-After") == "" {
		t.Errorf("frozen poll: %d %q Retry-After %q, want 204 with Retry-After", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	resp, body = call("POST", "/api/v4/runners/verify", runner)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"error":"organization_moving"`) || resp.Header.Get("Retry-After") == "" {
		t.Errorf("frozen runner call: %d %s, want 503 organization_moving with Retry-After", resp.StatusCode, body)
	}
	f.none(t)
	call("POST", "/api/v4/runners/verify", other) // another organization is not held back
	f.only(t, 2)

	reset()
	if _, err := table.Set(context.Background(), 7, 3, moves.Switched, known); err != nil {
		t.Fatal(err)
	}
	call("POST", "/api/v4/jobs/request", runner)
	f.only(t, 3) // switched: the new cell, though the token names cell 2

	reset()
	// A job already claimed in cell 2 (its token names it) keeps going there while its
	// organization (1) is frozen for a move to cell 3.
	if _, err := table.Set(context.Background(), 1, 3, moves.Freeze, known); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PATCH", f.front.URL+"/api/v4/jobs/42/trace", strings.NewReader("log line"))
	req.Header.Set("JOB-TOKEN", jobToken(t, key, "ES256", 2, time.Now().Add(time.Hour), "gitlab-authz-token"))
	if resp, body := do(t, req); resp.StatusCode != http.StatusOK {
		t.Errorf("job trace while its organization is frozen: %d %s", resp.StatusCode, body)
	}
	f.only(t, 2)

	reset()
	if err := table.Forget(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	call("POST", "/api/v4/runners/verify", runner)
	f.only(t, 2) // forgotten: the token's cell again
}

// At the switch, the classify answers cached for the cell the organization left are dropped on
// this edge (and the organization's own): the next lookup asks the service again, which says
// where the project lives now.
func TestSwitchDropsCachedClassifyAnswers(t *testing.T) {
	var asked atomic.Int32
	var where atomic.Pointer[string]
	classify := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"action":"proxy","proxy":{"address":%q}}`, *where.Load())
	}))
	t.Cleanup(classify.Close)
	c, err := discovery.NewClassifier(discovery.ClassifierOptions{URL: classify.URL})
	if err != nil {
		t.Fatal(err)
	}
	table := moves.NewTable(moves.NewMemory(), nil, nil)
	f := newFixture(t, func(o *Options) { o.Classifier, o.Moves = c, table })
	table.OnChange(f.proxy.OrgMoved)
	cell2, cell3 := f.cells[1].srv.URL, f.cells[2].srv.URL
	where.Store(&cell2)
	// A runner token of project 5 in organization 8, naming no cell: classify decides.
	tok, _ := tokens.MintRoutable("glrt-t2_", [16]byte{9}, tokens.Keys{}.Set(tokens.KeyOrganization, 8).Set(tokens.KeyProject, 5))
	verify := func() {
		req, _ := http.NewRequest("POST", f.front.URL+"/api/v4/runners/verify", strings.NewReader(`{"token":"`+tok+`"}`))
		req.Header.Set("Content-Type", "application/json")
		do(t, req)
	}
	verify()
	verify()
	if n := asked.Load(); n != 1 {
		t.Fatalf("classify asked %d times for two requests, want 1 (cached)", n)
	}
	where.Store(&cell3) // GitLab moved organization 7, project 5's (edge cannot tell)
	known := func(uint64) bool { return true }
	if _, err := table.Set(context.Background(), 7, 3, moves.Freeze, known); err != nil {
		t.Fatal(err)
	}
	verify()
	if n := asked.Load(); n != 1 {
		t.Errorf("classify asked again while frozen (%d): the answers stand until the switch", n)
	}
	if _, err := table.Set(context.Background(), 7, 3, moves.Switched, known); err != nil {
		t.Fatal(err)
	}
	for _, tc := range f.cells {
		tc.mu.Lock()
		tc.seen = nil
		tc.mu.Unlock()
	}
	verify()
	if n := asked.Load(); n != 2 {
		t.Errorf("classify asked %d times in all, want 2: the switch drops the cached answer", n)
	}
	f.only(t, 3)
}
