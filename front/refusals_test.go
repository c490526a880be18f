package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The latest refusals are kept newest first, with cause, status and request id, the path without
// its query and nothing of the tokens.
func TestRefusalsKept(t *testing.T) {
	f := newFixture(t, nil)
	front := f.front.Config.Handler.(*Front)
	tok2, tok3 := routable(t, 2), routable(t, 3)
	for i := range refusalsKept + 5 {
		resp, _ := do(t, newReq(t, "GET", fmt.Sprintf("%s/api/v4/jobs/%d?token=%s", f.front.URL, i+1, tok3), nil, "RUNNER-TOKEN", tok2))
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("conflicting tokens: %d, want 400", resp.StatusCode)
		}
	}
	got := front.Refusals()
	if len(got) != refusalsKept {
		t.Fatalf("kept %d, want %d", len(got), refusalsKept)
	}
	r := got[0]
	if r.Status != http.StatusBadRequest || r.Cause != "conflicting_tokens" || r.RequestID == "" || r.Path != fmt.Sprintf("/api/v4/jobs/%d", refusalsKept+5) || r.Route != "runner" {
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
