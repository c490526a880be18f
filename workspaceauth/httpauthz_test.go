package workspaceauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestHTTPIsAuthorizer(t *testing.T) {
	var h any = &HTTPAuthorizer{}
	if _, ok := h.(Authorizer); !ok {
		t.Errorf("*HTTPAuthorizer is not an Authorizer")
	}
}

const httpSecret = "0123456789abcdef0123456789abcdef-test"

// httpNow is the clock of the authorizer under test: the JWTs it signs are checked against it.
func httpNow() time.Time { return time.Unix(1_750_000_000, 0) }

func newTestHTTP(t *testing.T, url string, change func(*HTTPOptions)) *HTTPAuthorizer {
	t.Helper()
	o := HTTPOptions{URL: url, Secret: []byte(httpSecret), Now: httpNow}
	if change != nil {
		change(&o)
	}
	h, err := NewHTTP(o)
	if err != nil {
		t.Fatalf("NewHTTP: %v", err)
	}
	return h
}

func TestHTTPAnswers(t *testing.T) {
	long := `{"allowed": true, "agent_id": "a1", "workspace_id": "w1", "pad": "`
	tests := []struct {
		name    string
		status  int
		body    string
		want    Decision
		wantErr error
	}{
		{"allowed", 200, `{"allowed": true, "agent_id": "a1", "workspace_id": "w-7f3a"}`, Decision{Allowed: true, AgentID: "a1", WorkspaceID: "w-7f3a"}, nil},
		{"allowed, more fields", 200, `{"allowed": true, "agent_id": "agent.1_x-y", "workspace_id": "7", "user": {"id": "1"}}`, Decision{Allowed: true, AgentID: "agent.1_x-y", WorkspaceID: "7"}, nil},
		{"allowed, 64 KiB answer", 200, long + strings.Repeat("x", 64<<10-len(long)-2) + `"}`, Decision{Allowed: true, AgentID: "a1", WorkspaceID: "w1"}, nil},
		{"not allowed", 200, `{"allowed": false}`, Decision{}, nil},
		{"not allowed, with an agent", 200, `{"allowed": false, "agent_id": "a1"}`, Decision{}, nil},
		{"forbidden", 403, `{"message": "403 Forbidden"}`, Decision{}, nil},
		{"forbidden, no body", 403, ``, Decision{}, nil},
		{"not found", 404, `{"message": "404 Not Found"}`, Decision{}, ErrNotFound},

		{"allowed without agent", 200, `{"allowed": true, "workspace_id": "w"}`, Decision{}, ErrUnavailable},
		{"allowed with a bad agent", 200, `{"allowed": true, "agent_id": "a/../b"}`, Decision{}, ErrUnavailable},
		{"allowed with a long agent", 200, `{"allowed": true, "agent_id": "` + strings.Repeat("a", 65) + `"}`, Decision{}, ErrUnavailable},
		{"allowed as a string", 200, `{"allowed": "true", "agent_id": "a1"}`, Decision{}, ErrUnavailable},
		{"no allowed", 200, `{"agent_id": "a1"}`, Decision{}, ErrUnavailable},
		{"null", 200, `null`, Decision{}, ErrUnavailable},
		{"empty", 200, ``, Decision{}, ErrUnavailable},
		{"not JSON", 200, `<html>allowed</html>`, Decision{}, ErrUnavailable},
		{"two values", 200, `{"allowed": false} {"allowed": true, "agent_id": "a1"}`, Decision{}, ErrUnavailable},
		{"over 64 KiB", 200, long + strings.Repeat("x", 64<<10) + `"}`, Decision{}, ErrUnavailable},
		{"over 64 KiB, forbidden", 403, strings.Repeat(" ", 64<<10+1), Decision{}, ErrUnavailable},
		{"no content", 204, ``, Decision{}, ErrUnavailable},
		{"unauthorized", 401, `{"allowed": true, "agent_id": "a1"}`, Decision{}, ErrUnavailable},
		{"server error", 500, `{"allowed": true, "agent_id": "a1"}`, Decision{}, ErrUnavailable},
		{"bad gateway", 502, ``, Decision{}, ErrUnavailable},
		{"unavailable", 503, ``, Decision{}, ErrUnavailable},
		{"created", 201, `{"allowed": true, "agent_id": "a1"}`, Decision{}, ErrUnavailable},
		{"redirect", 302, ``, Decision{}, ErrUnavailable},
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
			got, err := h.Authorize(t.Context(), User{ID: "1", Username: "alice"}, "ws-alice", 60001)
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("error: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// The request is the documented one, and its JWT verifies with the shared secret, HS256 only.
func TestHTTPRequest(t *testing.T) {
	type seen struct {
		method, path, contentType, auth string
		body                            []byte
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body}
		io.WriteString(w, `{"allowed": false}`)
	}))
	defer srv.Close()
	h := newTestHTTP(t, srv.URL+"/authorize", nil)
	if _, err := h.Authorize(t.Context(), User{ID: "42", Username: "alice"}, "ws-7f3a", 60001); err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	r := <-got

	if r.method != http.MethodPost {
		t.Errorf("method: got %q, want %q", r.method, http.MethodPost)
	}
	if r.path != "/authorize" {
		t.Errorf("path: got %q, want %q", r.path, "/authorize")
	}
	if r.contentType != "application/json" {
		t.Errorf("Content-Type: got %q, want %q", r.contentType, "application/json")
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	wantBody := `{"port":60001,"user":{"id":"42","username":"alice"},"workspace":"ws-7f3a"}`
	if canon, _ := json.Marshal(body); string(canon) != wantBody {
		t.Errorf("body: got %s, want %s", canon, wantBody)
	}

	raw, ok := strings.CutPrefix(r.auth, "Bearer ")
	if !ok {
		t.Fatalf("Authorization: got %q, want a bearer token", r.auth)
	}
	claims := &jwt.RegisteredClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return []byte(httpSecret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer("edge"), jwt.WithAudience("gitlab"),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(func() time.Time { return httpNow().Add(time.Second) }))
	if err != nil {
		t.Fatalf("JWT: %v", err)
	}
	if alg := tok.Header["alg"]; alg != "HS256" {
		t.Errorf("alg: got %v, want HS256", alg)
	}
	if claims.IssuedAt == nil || !claims.IssuedAt.Equal(httpNow()) {
		t.Errorf("iat: got %v, want %v", claims.IssuedAt, httpNow())
	}
	if life := claims.ExpiresAt.Sub(claims.IssuedAt.Time); life <= 0 || life > 30*time.Second {
		t.Errorf("exp - iat: got %v, want at most 30s", life)
	}

	t.Run("other key", func(t *testing.T) {
		_, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return []byte(httpSecret + "x"), nil },
			jwt.WithTimeFunc(httpNow))
		if !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			t.Errorf("JWT with another key: got %v, want %v", err, jwt.ErrTokenSignatureInvalid)
		}
	})
	t.Run("expired after 30s", func(t *testing.T) {
		_, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return []byte(httpSecret), nil },
			jwt.WithTimeFunc(func() time.Time { return httpNow().Add(31 * time.Second) }))
		if !errors.Is(err, jwt.ErrTokenExpired) {
			t.Errorf("JWT 31s later: got %v, want %v", err, jwt.ErrTokenExpired)
		}
	})
}

// A server that never answers: the call ends at the timeout, unavailable.
func TestHTTPTimeout(t *testing.T) {
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
	d, err := h.Authorize(t.Context(), User{ID: "1"}, "ws", 1)
	if d != (Decision{}) {
		t.Errorf("decision: got %+v, want none", d)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error: got %v, want %v", err, ErrUnavailable)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error: got %v, want it to wrap %v", err, context.DeadlineExceeded)
	}

	t.Run("caller gives up", func(t *testing.T) {
		h := newTestHTTP(t, srv.URL, nil) // 5 s: the caller's context ends first
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := h.Authorize(ctx, User{ID: "1"}, "ws", 1)
			errc <- err
		}()
		cancel()
		if err := <-errc; !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Errorf("error: got %v, want %v wrapping %v", err, ErrUnavailable, context.Canceled)
		}
	})
}

func TestHTTPNoServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	h := newTestHTTP(t, url, nil)
	if _, err := h.Authorize(t.Context(), User{ID: "1"}, "ws", 1); !errors.Is(err, ErrUnavailable) {
		t.Errorf("error: got %v, want %v", err, ErrUnavailable)
	}
}

// A redirect is not followed, even with a client that would follow it: the JWT goes nowhere else.
func TestHTTPNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		io.WriteString(w, `{"allowed": true, "agent_id": "a1"}`)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()

	for _, c := range []struct {
		name   string
		client *http.Client
	}{
		{"own client", nil},
		{"given client", &http.Client{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newTestHTTP(t, srv.URL, func(o *HTTPOptions) { o.Client = c.client })
			d, err := h.Authorize(t.Context(), User{ID: "1"}, "ws", 1)
			if d.Allowed || !errors.Is(err, ErrUnavailable) {
				t.Errorf("Authorize: got %+v %v, want %v", d, err, ErrUnavailable)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("requests to the redirect target: got %d, want 0", n)
			}
		})
	}
	t.Run("given client unchanged", func(t *testing.T) {
		given := &http.Client{}
		newTestHTTP(t, srv.URL, func(o *HTTPOptions) { o.Client = given })
		if given.CheckRedirect != nil {
			t.Errorf("the given client's CheckRedirect was changed")
		}
	})
}

func TestNewHTTP(t *testing.T) {
	secret := []byte(httpSecret)
	tests := []struct {
		name string
		o    HTTPOptions
		ok   bool
	}{
		{"https", HTTPOptions{URL: "https://gitlab.example.com/api/v4/internal/workspaces/authorize", Secret: secret}, true},
		{"http", HTTPOptions{URL: "http://127.0.0.1:8080/authorize", Secret: secret, Timeout: time.Second}, true},
		{"32 byte secret", HTTPOptions{URL: "https://gitlab.example.com/", Secret: secret[:32]}, true},
		{"31 byte secret", HTTPOptions{URL: "https://gitlab.example.com/", Secret: secret[:31]}, false},
		{"no secret", HTTPOptions{URL: "https://gitlab.example.com/"}, false},
		{"no URL", HTTPOptions{Secret: secret}, false},
		{"no scheme", HTTPOptions{URL: "gitlab.example.com/authorize", Secret: secret}, false},
		{"other scheme", HTTPOptions{URL: "ftp://gitlab.example.com/", Secret: secret}, false},
		{"no host", HTTPOptions{URL: "https:///authorize", Secret: secret}, false},
		{"negative timeout", HTTPOptions{URL: "https://gitlab.example.com/", Secret: secret, Timeout: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHTTP(tt.o)
			if (err == nil) != tt.ok {
				t.Errorf("NewHTTP: got %v, want ok %v", err, tt.ok)
			}
		})
	}

	t.Run("defaults", func(t *testing.T) {
		h := newTestHTTP(t, "https://gitlab.example.com/", func(o *HTTPOptions) { o.Now = nil })
		if h.timeout != 5*time.Second {
			t.Errorf("timeout: got %v, want %v", h.timeout, 5*time.Second)
		}
		if h.now == nil {
			t.Errorf("now: got nil, want time.Now")
		}
	})
	t.Run("secret copied", func(t *testing.T) {
		s := bytes.Clone(secret)
		h := newTestHTTP(t, "https://gitlab.example.com/", func(o *HTTPOptions) { o.Secret = s })
		s[0] ^= 0xff
		if !bytes.Equal(h.secret, secret) {
			t.Errorf("the secret changed with the caller's slice")
		}
	})
}
