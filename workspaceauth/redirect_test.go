package workspaceauth

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// redirectFamily is every spelling of a request target that tries to make the Location after
// login lead off the workspace host.
var redirectFamily = []string{
	"//evil.example", "///evil.example", "/\\evil.example", "/\\/evil.example", "//\\evil.example",
	"/%2F%2Fevil.example", "/%5Cevil.example", "/%09/evil.example", "/%0d%0a/evil.example",
	"/.//evil.example", "/..//evil.example", "/%2e%2e//evil.example", "/a/..//evil.example",
	"/?next=//evil.example", "/?next=https://evil.example/", "/x?u=https%3A%2F%2Fevil.example",
	"http://evil.example/", "/\t/evil.example", "/\r\n/evil.example",
}

// rawGet sends target as it is, in the request line, to the rig's listener, with Host host.
func (r *rig) rawGet(t *testing.T, host, target string, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+r.port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	b.WriteString("GET " + target + " HTTP/1.1\r\nHost: " + host + ":" + r.port + "\r\nConnection: close\r\n")
	for _, ck := range cookies {
		b.WriteString("Cookie: " + ck.Name + "=" + ck.Value + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// staysOn resolves loc against base as a browser does (RFC 3986 after dropping tab, CR and LF
// and reading '\' as '/') and reports whether it is still on base's origin.
func staysOn(base, loc string) bool {
	b, _ := url.Parse(base)
	ref, err := url.Parse(strings.NewReplacer("\t", "", "\r", "", "\n", "", "\\", "/").Replace(loc))
	if err != nil {
		return false
	}
	u := b.ResolveReference(ref)
	return u.Scheme == b.Scheme && u.Host == b.Host && u.User == nil
}

// TestRedirectAfterLogin: a real login started at each target of the family ends with a
// Location on the workspace's own origin, and a plain URL comes back as it was asked.
func TestRedirectAfterLogin(t *testing.T) {
	r := newRig(t, nil)
	host := "8080-alice." + testDomain
	origin := "http://" + host + ":" + r.port
	// These reach a login: the test would prove nothing if the server refused them all.
	mustLogin := map[string]bool{"//evil.example": true, "///evil.example": true, "/\\evil.example": true,
		"/.//evil.example": true, "/%2F%2Fevil.example": true, "/?next=//evil.example": true, "/plain/path?q=1": true}
	for _, target := range append(redirectFamily, "/plain/path?q=1") {
		resp := r.rawGet(t, host, target)
		if (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound) && resp.Header.Get("Location") == "" {
			if mustLogin[target] {
				t.Errorf("%q: refused with %d before a login", target, resp.StatusCode)
			}
			continue // refused before any login (Go's server, or a host that disagrees): no Location
		}
		start := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(start, "http://auth."+testDomain+":"+r.port+"/oauth/start?login=") {
			t.Errorf("%q: %d to %q, want a login", target, resp.StatusCode, start)
			continue
		}
		c := browser()
		u, _ := url.Parse(origin + "/")
		c.Jar.SetCookies(u, resp.Cookies())
		authURL := wantRedirect(t, get(t, c, start), r.op.Issuer)
		withToken := wantRedirect(t, get(t, c, r.callback(c, authURL, "alice")), origin+"/")
		final := get(t, c, withToken)
		loc := final.Header.Get("Location")
		if final.StatusCode != http.StatusFound || !staysOn(origin+"/", loc) || !strings.HasPrefix(loc, "/") {
			t.Errorf("%q: after login %d to %q, which leaves %s", target, final.StatusCode, loc, origin)
		}
		if target == "/plain/path?q=1" && loc != target {
			t.Errorf("a plain URL: back to %q, want %q", loc, target)
		}
	}
}

// TestReturnPathBounded: a login ticket keeps at most a bounded return path: a longer one
// returns to "/", so what an unauthenticated request stores does not grow with its URL.
func TestReturnPathBounded(t *testing.T) {
	r := newRig(t, nil)
	long := "/" + strings.Repeat("a", 30<<10)
	resp := r.rawGet(t, "8080-alice."+testDomain, long)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	v, err := r.store.Get(t.Context(), "login:"+loc.Query().Get("login"))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 512 {
		t.Errorf("the ticket for a 30 KiB URL holds %d bytes", len(v))
	}
	if !strings.Contains(string(v), `"r":"http://8080-alice.ws.localhost:`+r.port+`/"`) {
		t.Errorf("ticket %s: want a return to /", v)
	}
}

// FuzzAfterLogin: for any request target Go's server accepts, the Location after login,
// resolved against the workspace origin, stays on it.
func FuzzAfterLogin(f *testing.F) {
	for _, s := range redirectFamily {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: 8080-w.ws.example\r\n\r\n")))
		if err != nil {
			return
		}
		loc := afterLogin(req.URL)
		if !staysOn("https://8080-w.ws.example/", loc) {
			t.Fatalf("target %q: Location %q leaves the workspace", target, loc)
		}
	})
}
