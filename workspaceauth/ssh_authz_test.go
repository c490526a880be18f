package workspaceauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestSSHAuthorizers(t *testing.T) {
	for name, a := range map[string]any{"*Static": &Static{}, "*HTTPAuthorizer": &HTTPAuthorizer{}} {
		if _, ok := a.(SSHAuthorizer); !ok {
			t.Errorf("%s is not an SSHAuthorizer", name)
		}
	}
}

const (
	sshAliceToken = "glpat-alice-S3cr3t"
	sshBobToken   = "glpat-bob-S3cr3t"
	sshHostKey    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVTe0zmSLlBOdOrVRw8OeeRzE3n1Y6rP4E6fzjXtJ9g"
)

func sshSum(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

func sshStaticFile(aliceOnWsAlice bool) string {
	users := "[alice]"
	if !aliceOnWsAlice {
		users = "[carol]"
	}
	return `workspaces:
  - name: ws-alice
    agent_id: a1
    users: ` + users + `
    ssh: {port: 2222, user: gitlab-workspaces, host_key: "` + sshHostKey + ` alice@ws"}
  - name: ws-nossh
    agent_id: a2
    users: [alice, bob]
users:
  - {name: alice, token_sha256: "` + sshSum(sshAliceToken) + `"}
  - {name: bob, token_sha256: "` + strings.ToUpper(sshSum(sshBobToken)) + `"}
`
}

// sshNoToken fails the test if err shows any of the tokens.
func sshNoToken(t *testing.T, err error, tokens ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, tok := range tokens {
		if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("error %q shows the token", err)
		}
	}
}

func TestStaticAuthorizeSSH(t *testing.T) {
	s := newTestStatic(t, sshStaticFile(true))
	alice := SSHDecision{
		Allowed: true,
		User:    User{ID: "alice", Username: "alice"},
		AgentID: "a1",
		Target:  SSHTarget{Port: 2222, User: "gitlab-workspaces", HostKey: sshHostKey + " alice@ws"},
	}
	tests := []struct {
		name      string
		token     string
		workspace string
		want      SSHDecision
		wantErr   error
	}{
		{"allowed", sshAliceToken, "ws-alice", alice, nil},
		{"wrong token", sshAliceToken + "x", "ws-alice", SSHDecision{}, nil},
		{"token's prefix", sshAliceToken[:len(sshAliceToken)-1], "ws-alice", SSHDecision{}, nil},
		{"the hash as token", sshSum(sshAliceToken), "ws-alice", SSHDecision{}, nil},
		{"empty token", "", "ws-alice", SSHDecision{}, nil},
		{"user without access", sshBobToken, "ws-alice", SSHDecision{}, nil},
		{"workspace without ssh", sshAliceToken, "ws-nossh", SSHDecision{}, nil},
		{"unknown workspace", sshAliceToken, "ws-carol", SSHDecision{}, ErrNotFound},
		{"unknown workspace, wrong token", "glpat-nobody", "ws-carol", SSHDecision{}, nil},
		{"workspace not a label", sshAliceToken, "WS/../x", SSHDecision{}, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.AuthorizeSSH(t.Context(), tt.token, tt.workspace)
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("error: got %v, want %v", err, tt.wantErr)
			}
			sshNoToken(t, err, tt.token, sshAliceToken, sshBobToken)
		})
	}

	t.Run("revoked by an edit", func(t *testing.T) {
		if err := os.WriteFile(s.path, []byte(sshStaticFile(false)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Reload(); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		got, err := s.AuthorizeSSH(t.Context(), sshAliceToken, "ws-alice")
		if got != (SSHDecision{}) || err != nil {
			t.Errorf("AuthorizeSSH: got %+v %v, want a denial", got, err)
		}
	})
}

const sshAllowed = `{"allowed": true, "user": {"id": "42", "username": "alice"}, "agent_id": "a1", "workspace_id": "w1",
	"ssh": {"port": 60022, "user": "gitlab-workspaces", "host_key": "` + sshHostKey + `"}}`

func TestHTTPAuthorizeSSHAnswers(t *testing.T) {
	allowed := SSHDecision{
		Allowed: true,
		User:    User{ID: "42", Username: "alice"},
		AgentID: "a1",
		Target:  SSHTarget{Port: 60022, User: "gitlab-workspaces", HostKey: sshHostKey},
	}
	with := func(port int, user string) SSHDecision {
		d := allowed
		d.Target.Port, d.Target.User = port, user
		return d
	}
	answer := func(ssh string) string {
		return `{"allowed": true, "user": {"id": "42", "username": "alice"}, "agent_id": "a1", "ssh": ` + ssh + `}`
	}
	tests := []struct {
		name    string
		status  int
		body    string
		want    SSHDecision
		wantErr error
	}{
		{"allowed", 200, sshAllowed, allowed, nil},
		{"allowed, other port and user", 200, answer(`{"port": 22, "user": "dev", "host_key": "` + sshHostKey + `"}`), with(22, "dev"), nil},
		{"allowed, no port", 200, answer(`{"user": "gitlab-workspaces", "host_key": "` + sshHostKey + `"}`), allowed, nil},
		{"allowed, no username", 200, `{"allowed": true, "user": {"id": "42"}, "agent_id": "a1", "ssh": {"user": "u", "host_key": "` + sshHostKey + `"}}`,
			SSHDecision{Allowed: true, User: User{ID: "42"}, AgentID: "a1", Target: SSHTarget{Port: 60022, User: "u", HostKey: sshHostKey}}, nil},
		{"not allowed", 200, `{"allowed": false}`, SSHDecision{}, nil},
		{"not allowed, with everything", 200, strings.Replace(sshAllowed, "true", "false", 1), SSHDecision{}, nil},
		{"forbidden", 403, `{"message": "403 Forbidden"}`, SSHDecision{}, nil},
		{"not found", 404, `{"message": "404 Not Found"}`, SSHDecision{}, ErrNotFound},

		{"allowed without host_key", 200, answer(`{"port": 60022, "user": "gitlab-workspaces"}`), SSHDecision{}, ErrUnavailable},
		{"allowed with an empty host_key", 200, answer(`{"user": "gitlab-workspaces", "host_key": ""}`), SSHDecision{}, ErrUnavailable},
		{"allowed without ssh", 200, `{"allowed": true, "user": {"id": "42"}, "agent_id": "a1"}`, SSHDecision{}, ErrUnavailable},
		{"allowed with ssh null", 200, answer(`null`), SSHDecision{}, ErrUnavailable},
		{"allowed with a host_key not base64", 200, answer(`{"user": "u", "host_key": "ssh-ed25519 not*base64"}`), SSHDecision{}, ErrUnavailable},
		{"allowed with a bare host_key", 200, answer(`{"user": "u", "host_key": "AAAAC3NzaC1lZDI1NTE5"}`), SSHDecision{}, ErrUnavailable},
		{"allowed without ssh user", 200, answer(`{"host_key": "` + sshHostKey + `"}`), SSHDecision{}, ErrUnavailable},
		{"allowed with a bad ssh user", 200, answer(`{"user": "a b", "host_key": "` + sshHostKey + `"}`), SSHDecision{}, ErrUnavailable},
		{"allowed with port 65536", 200, answer(`{"port": 65536, "user": "u", "host_key": "` + sshHostKey + `"}`), SSHDecision{}, ErrUnavailable},
		{"allowed with port -1", 200, answer(`{"port": -1, "user": "u", "host_key": "` + sshHostKey + `"}`), SSHDecision{}, ErrUnavailable},
		{"allowed with port as a string", 200, answer(`{"port": "22", "user": "u", "host_key": "` + sshHostKey + `"}`), SSHDecision{}, ErrUnavailable},
		{"allowed without agent", 200, strings.Replace(sshAllowed, `"agent_id": "a1",`, "", 1), SSHDecision{}, ErrUnavailable},
		{"allowed with a bad agent", 200, strings.Replace(sshAllowed, `"a1"`, `"a/../b"`, 1), SSHDecision{}, ErrUnavailable},
		{"allowed without user", 200, strings.Replace(sshAllowed, `"user": {"id": "42", "username": "alice"},`, "", 1), SSHDecision{}, ErrUnavailable},
		{"allowed without user.id", 200, strings.Replace(sshAllowed, `"id": "42", `, "", 1), SSHDecision{}, ErrUnavailable},
		{"no allowed", 200, strings.Replace(sshAllowed, `"allowed": true,`, "", 1), SSHDecision{}, ErrUnavailable},
		{"allowed as a string", 200, strings.Replace(sshAllowed, "true", `"true"`, 1), SSHDecision{}, ErrUnavailable},
		{"two values", 200, `{"allowed": false} ` + sshAllowed, SSHDecision{}, ErrUnavailable},
		{"not JSON", 200, `<html>allowed</html>`, SSHDecision{}, ErrUnavailable},
		{"empty", 200, ``, SSHDecision{}, ErrUnavailable},
		{"over 64 KiB", 200, strings.Replace(sshAllowed, `"w1"`, `"`+strings.Repeat("x", 64<<10)+`"`, 1), SSHDecision{}, ErrUnavailable},
		{"unauthorized", 401, sshAllowed, SSHDecision{}, ErrUnavailable},
		{"server error", 500, sshAllowed, SSHDecision{}, ErrUnavailable},
		{"created", 201, sshAllowed, SSHDecision{}, ErrUnavailable},
		{"no content", 204, ``, SSHDecision{}, ErrUnavailable},
		{"redirect", 302, ``, SSHDecision{}, ErrUnavailable},
		// An answer that quotes the token back (here as a bad ssh user): the error must not show it.
		{"token echoed", 200, answer(`{"user": "` + sshAliceToken + ` x", "host_key": "` + sshHostKey + `"}`), SSHDecision{}, ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if tt.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			h := newTestHTTP(t, srv.URL+"/api/v4/internal/workspaces/authorize", nil)
			got, err := h.AuthorizeSSH(t.Context(), sshAliceToken, "ws-alice")
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("error: got %v, want %v", err, tt.wantErr)
			}
			sshNoToken(t, err, sshAliceToken)
		})
	}
}

// The request is the documented one, with the same JWT as Authorize's.
func TestHTTPAuthorizeSSHRequest(t *testing.T) {
	type seen struct {
		method, contentType, auth string
		body                      []byte
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body}
		io.WriteString(w, sshAllowed)
	}))
	defer srv.Close()
	h := newTestHTTP(t, srv.URL+"/authorize", nil)
	if _, err := h.AuthorizeSSH(t.Context(), sshAliceToken, "ws-alice"); err != nil {
		t.Fatalf("AuthorizeSSH: %v", err)
	}
	r := <-got

	if r.method != http.MethodPost {
		t.Errorf("method: got %q, want %q", r.method, http.MethodPost)
	}
	if r.contentType != "application/json" {
		t.Errorf("Content-Type: got %q, want %q", r.contentType, "application/json")
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("body: %v", err)
	}
	wantBody := `{"personal_access_token":"` + sshAliceToken + `","ssh":true,"workspace":"ws-alice"}`
	if canon, _ := json.Marshal(body); string(canon) != wantBody {
		t.Errorf("body: got %s, want %s", canon, wantBody)
	}
	if strings.Contains(r.auth, sshAliceToken) {
		t.Errorf("Authorization carries the token")
	}
	raw, ok := strings.CutPrefix(r.auth, "Bearer ")
	if !ok {
		t.Fatalf("Authorization: got %q, want a bearer token", r.auth)
	}
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return []byte(httpSecret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer("edge"), jwt.WithAudience("gitlab"),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(func() time.Time { return httpNow().Add(time.Second) }))
	if err != nil {
		t.Fatalf("JWT: %v", err)
	}
	if life := claims.ExpiresAt.Sub(claims.IssuedAt.Time); life <= 0 || life > 30*time.Second {
		t.Errorf("exp - iat: got %v, want at most 30s", life)
	}
}

// Questions that need no answer are not asked: the token is not sent.
func TestHTTPAuthorizeSSHNotAsked(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		io.WriteString(w, sshAllowed)
	}))
	defer srv.Close()
	h := newTestHTTP(t, srv.URL, nil)
	tests := []struct {
		name, token, workspace string
		wantErr                error
	}{
		{"empty token", "", "ws-alice", nil},
		{"workspace not a label", sshAliceToken, "ws_alice", ErrNotFound},
		{"empty workspace", sshAliceToken, "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.AuthorizeSSH(t.Context(), tt.token, tt.workspace)
			if got != (SSHDecision{}) {
				t.Errorf("decision: got %+v, want a denial", got)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("error: got %v, want %v", err, tt.wantErr)
			}
			sshNoToken(t, err, sshAliceToken)
		})
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("requests: got %d, want 0", n)
	}
}

func TestHTTPAuthorizeSSHTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release) // before Close, which waits for the handler

	h := newTestHTTP(t, srv.URL, func(o *HTTPOptions) { o.Timeout = 50 * time.Millisecond })
	d, err := h.AuthorizeSSH(t.Context(), sshAliceToken, "ws-alice")
	if d != (SSHDecision{}) {
		t.Errorf("decision: got %+v, want none", d)
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error: got %v, want %v wrapping %v", err, ErrUnavailable, context.DeadlineExceeded)
	}
	sshNoToken(t, err, sshAliceToken)
}

func TestHTTPAuthorizeSSHNoServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	h := newTestHTTP(t, url, nil)
	_, err := h.AuthorizeSSH(t.Context(), sshAliceToken, "ws-alice")
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error: got %v, want %v", err, ErrUnavailable)
	}
	sshNoToken(t, err, sshAliceToken)
}

func TestWithoutToken(t *testing.T) {
	const tok = "glpat-x"
	tests := []struct {
		name     string
		err      error
		wantKind error
		withheld bool
	}{
		{"nil", nil, nil, false},
		{"no token in it", fmt.Errorf("%w: status 500", ErrUnavailable), ErrUnavailable, false},
		{"token in it", fmt.Errorf("%w: user %q", ErrUnavailable, tok), ErrUnavailable, true},
		{"token in a not found", fmt.Errorf("%w: %q", ErrNotFound, tok), ErrNotFound, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withoutToken(tt.err, tok)
			if tt.err == nil {
				if got != nil {
					t.Errorf("got %v, want nil", got)
				}
				return
			}
			if !errors.Is(got, tt.wantKind) {
				t.Errorf("got %v, want it to wrap %v", got, tt.wantKind)
			}
			if withheld := got != tt.err; withheld != tt.withheld {
				t.Errorf("withheld: got %v, want %v", withheld, tt.withheld)
			}
			sshNoToken(t, got, tok)
		})
	}
}
