package cellrouter

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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
