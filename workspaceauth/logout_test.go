package workspaceauth

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLogoutOnlyBySameOriginPost: GET /logout shows a form and logs nobody out; a POST logs out
// only with the auth host's own Origin, or Sec-Fetch-Site: same-origin without an Origin. Every
// other spelling of "another site" is refused with 403 and the session stays.
func TestLogoutOnlyBySameOriginPost(t *testing.T) {
	r := newRig(t, nil)
	auth := "http://auth." + testDomain + ":" + r.port
	c := browser()
	r.login(c, "alice", "alice")
	stillIn := func(when string) {
		t.Helper()
		if resp := get(t, c, r.url("alice", "/index.html")); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: the session is gone (status %d)", when, resp.StatusCode)
		}
		<-r.seen
	}

	resp, err := c.Get(auth + "/logout")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `<form method="post" action="/logout">`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("GET /logout: %d %q, CSP %q; want the page with its form, not framable", resp.StatusCode, body, resp.Header.Get("Content-Security-Policy"))
	}
	stillIn("after GET /logout")

	for _, header := range [][]string{
		nil,
		{"Origin", "http://evil.example"},
		{"Origin", "null"},
		{"Origin", r.url("alice", "")}, // a workspace app: same site, another origin
		{"Origin", "https://auth." + testDomain + ":" + r.port},
		{"Origin", "http://auth." + testDomain},
		{"Origin", "http://AUTH." + testDomain + ":" + r.port + "/"},
		{"Origin", auth + ".evil.example"},
		{"Sec-Fetch-Site", "same-site"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "none"},
		{"Origin", "http://evil.example", "Sec-Fetch-Site", "same-origin"},
	} {
		if resp := post(t, c, auth+"/logout", header...); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST /logout with %q: %d, want 403", header, resp.StatusCode)
		}
	}
	stillIn("after refused logouts")
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		if resp := do(t, c, m, auth+"/logout", "Origin", auth); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /logout: %d, want 405", m, resp.StatusCode)
		}
	}
	stillIn("after other methods")

	if resp := post(t, c, auth+"/logout", "Sec-Fetch-Site", "same-origin"); resp.StatusCode != http.StatusOK {
		t.Fatalf("same-origin POST /logout: %d", resp.StatusCode)
	}
	wantRedirect(t, get(t, c, r.url("alice", "/")), "http://auth.")
}

// TestAuthOriginWithoutDefaultPort: a redirect URL that names the scheme's default port still
// matches the Origin a browser sends, which leaves that port out.
func TestAuthOriginWithoutDefaultPort(t *testing.T) {
	for redirect, want := range map[string]string{
		"https://auth.example.com:443/oauth/callback":  "https://auth.example.com",
		"https://auth.example.com/oauth/callback":      "https://auth.example.com",
		"https://auth.example.com:8443/oauth/callback": "https://auth.example.com:8443",
	} {
		a, err := New(Options{Domain: "example.com", RedirectURL: redirect, SessionKey: make([]byte, 32), SessionTTL: time.Hour, Recheck: time.Minute,
			Authorizer: &fakeAuthorizer{}, Store: NewMemoryStore(Limits{PerClient: 1, Total: 1}), Forward: func(http.ResponseWriter, *http.Request, string, int) {}})
		if err != nil {
			t.Fatal(err)
		}
		if a.authOrigin != want {
			t.Errorf("%s: origin %q, want %q", redirect, a.authOrigin, want)
		}
	}
}
