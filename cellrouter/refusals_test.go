package cellrouter

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gitlab.com/edge/edge/front"
)

// The latest refusals are kept newest first, with cause, status and request id, the path without
// its query and nothing of the tokens.
// keptRefusals is how many of the latest refusals the status page shows.
const keptRefusals = 100

func TestRefusalsKept(t *testing.T) {
	f := newFixture(t, nil)
	front := f.front.Config.Handler.(*front.Front)
	tok2, tok3 := routable(t, 2), routable(t, 3)
	for i := range keptRefusals + 5 {
		resp, _ := do(t, newReq(t, "GET", fmt.Sprintf("%s/api/v4/jobs/%d?token=%s", f.front.URL, i+1, tok3), nil, "RUNNER-TOKEN", tok2))
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("conflicting tokens: %d, want 400", resp.StatusCode)
		}
	}
	got := front.Refusals()
	if len(got) != keptRefusals {
		t.Fatalf("kept %d, want %d", len(got), keptRefusals)
	}
	r := got[0]
	if r.Status != http.StatusBadRequest || r.Cause != "conflicting_tokens" || r.RequestID == "" || r.Path != fmt.Sprintf("/api/v4/jobs/%d", keptRefusals+5) || r.Route != "runner" {
		t.Errorf("newest: %+v", r)
	}
	if got[len(got)-1].Path != "/api/v4/jobs/6" {
		t.Errorf("oldest kept: %s, want /api/v4/jobs/6", got[len(got)-1].Path)
	}
	for _, r := range got {
		if s := fmt.Sprintf("%+v", r); strings.Contains(s, tok2[8:]) || strings.Contains(s, tok3[8:]) {
			t.Fatalf("a refusal holds a token: %s", s)
		}
	}
}
