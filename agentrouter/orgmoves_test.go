package agentrouter

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/tokens"
)

// The organization moves of the API for GitLab, as GitLab's migration tooling calls them:
// authenticated as the API is, checked before anything is written, in force at once.
func TestOrganizationMovesAPI(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	v, err := tokens.NewGitLabAPIVerifier(secret, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	router, _, _ := newAgentFixture(t, time.Second)
	table := moves.NewTable(moves.NewMemory(), nil, nil)
	api := NewGitLabAPI(router, v, table, func(c uint64) bool { return c >= 1 && c <= 3 })
	token, err := tokens.MintGitLabAPIToken(secret, "", "", time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string, auth bool) (int, http.Header, string) {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if auth {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		return w.Code, w.Header(), w.Body.String()
	}
	const cell = "/-/api/v1/organizations/7/cell"
	steps := []struct {
		method, path, body string
		auth               bool
		status             int
		has                string
	}{
		{"PUT", cell, `{"cell":3,"phase":"freeze"}`, false, 401, `"error":"unauthorized"`},
		{"GET", "/-/api/v1/organizations/moves", "", true, 200, `{"moves":[]}`},
		{"PUT", cell, `{"cell":3,"phase":"freeze"}`, true, 200, `"org_id":7,"cell":3,"phase":"freeze"`},
		{"PUT", cell, `{"cell":3,"phase":"switched"}`, true, 200, `"phase":"switched"`},
		{"PUT", cell, `{"cell":3,"phase":"freeze"}`, true, 409, `"error":"conflict"`},
		{"PUT", cell, `{"cell":9,"phase":"freeze"}`, true, 400, `unknown cell`},
		{"PUT", cell, `{"cell":3,"phase":"thawed"}`, true, 400, `bad phase`},
		{"PUT", cell, `{"cell":3,"phase":"freeze","extra":1}`, true, 400, `"error":"bad_request"`},
		{"PUT", cell, `not json`, true, 400, `"error":"bad_request"`},
		{"PUT", "/-/api/v1/organizations/0/cell", `{"cell":3,"phase":"freeze"}`, true, 400, `not a positive integer`},
		{"PUT", "/-/api/v1/organizations/-7/cell", `{"cell":3,"phase":"freeze"}`, true, 400, `not a positive integer`},
		{"PUT", "/-/api/v1/organizations/07/cell", `{"cell":3,"phase":"freeze"}`, true, 400, `not a positive integer`},
		{"PUT", "/-/api/v1/organizations/seven/cell", `{"cell":3,"phase":"freeze"}`, true, 400, `not a positive integer`},
		{"POST", cell, `{"cell":3,"phase":"freeze"}`, true, 405, `method_not_allowed`},
		{"GET", "/-/api/v1/organizations/moves", "", true, 200, `{"moves":[{"org_id":7,"cell":3,"phase":"switched","since":"`},
		{"DELETE", cell, "", true, 204, ``},
		{"DELETE", cell, "", true, 404, `"error":"not_found"`},
		{"GET", "/-/api/v1/organizations/moves", "", true, 200, `{"moves":[]}`},
	}
	for i, s := range steps {
		status, h, body := call(s.method, s.path, s.body, s.auth)
		if status != s.status || !strings.Contains(body, s.has) {
			t.Errorf("step %d, %s %s %s: %d %s; want %d with %s", i, s.method, s.path, s.body, status, body, s.status, s.has)
		}
		if status == 405 && h.Get("Allow") != "PUT, DELETE" {
			t.Errorf("step %d: Allow %q, want PUT, DELETE", i, h.Get("Allow"))
		}
	}
	// The refused calls wrote nothing: the switch stood until the move was forgotten.
	if all := table.All(); len(all) != 0 {
		t.Errorf("moves left: %+v", all)
	}
	var got struct {
		Moves []moves.Move `json:"moves"`
	}
	table.Set(context.Background(), 8, 2, moves.Freeze, func(uint64) bool { return true })
	_, _, body := call("GET", "/-/api/v1/organizations/moves", "", true)
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Moves) != 1 || got.Moves[0].Org != 8 {
		t.Errorf("moves read back: %+v %v", got, err)
	}
}

// An edge whose API for GitLab has no moves answers their paths 404 not_configured.
func TestOrganizationMovesNotServed(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	v, _ := tokens.NewGitLabAPIVerifier(secret, "", "", 0)
	router, _, _ := newAgentFixture(t, time.Second)
	api := NewGitLabAPI(router, v, nil, nil)
	token, _ := tokens.MintGitLabAPIToken(secret, "", "", time.Now(), time.Minute)
	r := httptest.NewRequest("GET", "/-/api/v1/organizations/moves", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	api.ServeHTTP(w, r)
	if w.Code != 404 || !strings.Contains(w.Body.String(), "not_configured") {
		t.Errorf("got %d %s", w.Code, w.Body.String())
	}
}
