package workspaceauth

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"gitlab.com/edge/edge/internal/testkit/oidctest"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

const testDomain = "ws.localhost"

// fakeAuthorizer answers from a table the test changes; it counts its calls.
type fakeAuthorizer struct {
	mu      sync.Mutex
	allowed map[string]bool // "user/workspace"
	fail    bool
	calls   atomic.Int32
}

func (f *fakeAuthorizer) Authorize(_ context.Context, u User, ws string, _ int) (Decision, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return Decision{}, ErrUnavailable
	}
	if f.allowed[u.Username+"/"+ws] {
		return Decision{Allowed: true, AgentID: "a1", WorkspaceID: ws}, nil
	}
	return Decision{}, nil
}

func (f *fakeAuthorizer) set(user, ws string, allowed bool, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allowed[user+"/"+ws] = allowed
	f.fail = fail
}

// rig is an Auth in front of an upstream app, with a real OpenID provider, reached at
// *.ws.localhost on one loopback port.
type rig struct {
	t        *testing.T
	op       *oidctest.Provider
	port     string
	auth     *Auth
	store    *MemoryStore
	authz    *fakeAuthorizer
	upstream *httptest.Server
	seen     chan http.Header // what the app received
}

func newRig(t *testing.T, configure func(*Options)) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	r := &rig{t: t, port: port, store: NewMemoryStore(Limits{PerClient: 100, Total: 100_000}), seen: make(chan http.Header, 100),
		authz: &fakeAuthorizer{allowed: map[string]bool{"alice/alice": true, "bob/bob": true}}}
	r.op = oidctest.Start(t, oidctest.Options{
		RedirectURIs: []string{"http://auth." + testDomain + ":" + port + "/oauth/callback"},
		Users:        []oidctest.User{{Username: "alice", Password: "pw-alice"}, {Username: "bob", Password: "pw-bob"}},
	})
	r.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/ws" {
			c, err := websocket.Accept(w, req, &websocket.AcceptOptions{InsecureSkipVerify: true})
			if err != nil {
				return
			}
			defer c.CloseNow()
			for {
				typ, b, err := c.Read(req.Context())
				if err != nil {
					return
				}
				if c.Write(req.Context(), typ, b) != nil {
					return
				}
			}
		}
		r.seen <- req.Header.Clone()
		http.SetCookie(w, &http.Cookie{Name: "edge_session", Value: "from-the-app"})
		http.SetCookie(w, &http.Cookie{Name: "app", Value: "1"})
		io.WriteString(w, "app "+req.URL.Path)
	}))
	t.Cleanup(r.upstream.Close)
	target, _ := url.Parse(r.upstream.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	o := Options{
		Domain: testDomain, Insecure: true, Issuer: r.op.Issuer, ClientID: r.op.ClientID, ClientSecret: r.op.ClientSecret,
		RedirectURL: "http://auth." + testDomain + ":" + port + "/oauth/callback", Scopes: []string{"openid", "profile"},
		SessionKey: []byte(strings.Repeat("k", 32)), SessionTTL: time.Hour, Recheck: time.Hour,
		Authorizer: r.authz, Store: r.store,
		Forward: func(w http.ResponseWriter, req *http.Request, agentID string, port int) {
			if agentID != "a1" || port != 8080 {
				t.Errorf("forwarded to agent %q port %d, want a1 8080", agentID, port)
			}
			rp.ServeHTTP(w, req)
		},
	}
	if configure != nil {
		configure(&o)
	}
	if r.auth, err = New(o); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r.handler(r.auth)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *rig) handler(a *Auth) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.Host, "auth.") {
			a.ServeAuth(w, req)
			return
		}
		a.ServeWorkspace(w, req)
	})
}

func (r *rig) url(ws, path string) string {
	return "http://8080-" + ws + "." + testDomain + ":" + r.port + path
}

// browser is a cookie jar that does not follow redirects, so each step can be checked.
func browser() *http.Client {
	c := testnet.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func get(t *testing.T, c *http.Client, u string, header ...string) *http.Response {
	t.Helper()
	return do(t, c, "GET", u, header...)
}

func post(t *testing.T, c *http.Client, u string, header ...string) *http.Response {
	t.Helper()
	return do(t, c, "POST", u, header...)
}

// do sends a request without a body with the header pairs given, and reads the answer whole.
func do(t *testing.T, c *http.Client, method, u string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func wantRedirect(t *testing.T, resp *http.Response, prefix string) string {
	t.Helper()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, prefix) {
		t.Fatalf("got %d to %q, want a redirect to %s...", resp.StatusCode, loc, prefix)
	}
	return loc
}

// toProvider starts a login at a workspace URL and returns the provider's authorization URL.
func (r *rig) toProvider(c *http.Client, ws string) string {
	r.t.Helper()
	start := wantRedirect(r.t, get(r.t, c, r.url(ws, "/index.html?x=1")), "http://auth."+testDomain+":"+r.port+"/oauth/start?login=")
	return wantRedirect(r.t, get(r.t, c, start), r.op.Issuer)
}

// callback logs in at the provider and returns the redirect back to edge's callback.
func (r *rig) callback(c *http.Client, authURL, user string) string {
	r.t.Helper()
	back, err := r.op.Login(context.Background(), c, authURL, user, "pw-"+user)
	if err != nil {
		r.t.Fatalf("provider login: %v", err)
	}
	return back.String()
}

// login runs a whole login for user at workspace ws and returns the browser.
func (r *rig) login(c *http.Client, ws, user string) {
	r.t.Helper()
	cb := r.callback(c, r.toProvider(c, ws), user)
	withToken := wantRedirect(r.t, get(r.t, c, cb), r.url(ws, "/index.html?"))
	clean := wantRedirect(r.t, get(r.t, c, withToken), "/index.html")
	if clean != "/index.html?x=1" {
		r.t.Errorf("after the transfer: redirect to %q, want the URL asked for without the token", clean)
	}
}

func TestLoginFlow(t *testing.T) {
	r := newRig(t, nil)
	c := browser()
	r.login(c, "alice", "alice")
	resp := get(t, c, r.url("alice", "/index.html"), "Cookie", "app=kept")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after login: status %d", resp.StatusCode)
	}
	seen := <-r.seen
	for _, ck := range (&http.Request{Header: seen}).Cookies() {
		if edgeCookie(ck.Name) {
			t.Errorf("edge cookie %s reached the workspace", ck.Name)
		}
	}
	if got := resp.Header.Values("Set-Cookie"); len(got) != 1 || !strings.HasPrefix(got[0], "app=1") {
		t.Errorf("Set-Cookie from the app: got %q, want only app=1 (edge's names dropped)", got)
	}
	t.Run("cookie is for one workspace", func(t *testing.T) {
		u, _ := url.Parse(r.url("alice", "/"))
		var session *http.Cookie
		for _, ck := range c.Jar.Cookies(u) {
			if ck.Name == sessionCookie {
				session = ck
			}
		}
		if session == nil {
			t.Fatal("no session cookie for alice's host")
		}
		other := browser()
		ub, _ := url.Parse(r.url("bob", "/"))
		other.Jar.SetCookies(ub, []*http.Cookie{{Name: sessionCookie, Value: session.Value}})
		wantRedirect(t, get(t, other, r.url("bob", "/")), "http://auth.")
		u2, _ := url.Parse(r.url("alice", "/"))
		other.Jar.SetCookies(u2, []*http.Cookie{{Name: sessionCookie, Value: session.Value[:len(session.Value)-2] + "AA"}})
		wantRedirect(t, get(t, other, r.url("alice", "/")), "http://auth.")
	})
	t.Run("expired cookie", func(t *testing.T) {
		v, err := r.auth.cookies.encode(sessionCookie, session{User: User{ID: "sub-alice", Username: "alice"}, Host: "8080-alice." + testDomain,
			Issued: time.Now().UnixNano(), Expires: time.Now().Add(-time.Minute).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		c2 := browser()
		u, _ := url.Parse(r.url("alice", "/"))
		c2.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: v}})
		wantRedirect(t, get(t, c2, r.url("alice", "/")), "http://auth.")
	})
	t.Run("another user's workspace", func(t *testing.T) {
		bobsBrowser := browser()
		r.login(bobsBrowser, "alice", "bob")
		if resp := get(t, bobsBrowser, r.url("alice", "/")); resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob on alice's workspace: status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("logout", func(t *testing.T) {
		resp := post(t, c, "http://auth."+testDomain+":"+r.port+"/logout", "Origin", "http://auth."+testDomain+":"+r.port)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		wantRedirect(t, get(t, c, r.url("alice", "/")), "http://auth.")
	})
}

func TestStateChecks(t *testing.T) {
	r := newRig(t, nil)
	auth := "http://auth." + testDomain + ":" + r.port
	t.Run("missing", func(t *testing.T) {
		if resp := get(t, browser(), auth+"/oauth/callback?code=x"); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("forged", func(t *testing.T) {
		c := browser()
		cb, _ := url.Parse(r.callback(c, r.toProvider(c, "alice"), "alice"))
		q := cb.Query()
		q.Set("state", strings.Repeat("A", 43))
		cb.RawQuery = q.Encode()
		if resp := get(t, c, cb.String()); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("replayed", func(t *testing.T) {
		c := browser()
		cb := r.callback(c, r.toProvider(c, "alice"), "alice")
		wantRedirect(t, get(t, c, cb), r.url("alice", "/"))
		if resp := get(t, c, cb); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("replay: status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("from another browser", func(t *testing.T) {
		attacker := browser()
		cb := r.callback(attacker, r.toProvider(attacker, "alice"), "alice")
		if resp := get(t, browser(), cb); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("the attacker's callback in a victim's browser: status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("login ticket replayed", func(t *testing.T) {
		c := browser()
		start := wantRedirect(t, get(t, c, r.url("alice", "/")), auth+"/oauth/start")
		wantRedirect(t, get(t, c, start), r.op.Issuer)
		if resp := get(t, c, start); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("second use of a login ticket: status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("PKCE verifier mismatch", func(t *testing.T) {
		c := browser()
		authURL := r.toProvider(c, "alice")
		state, _ := url.Parse(authURL)
		key := "state:" + state.Query().Get("state")
		// Swap the verifier edge kept for this login: the provider must refuse the code.
		raw, err := r.store.Take(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		tampered := strings.Replace(string(raw), `"v":"`, `"v":"x`, 1)
		if err := r.store.Put(context.Background(), key, "", []byte(tampered), time.Minute); err != nil {
			t.Fatal(err)
		}
		cb := r.callback(c, authURL, "alice")
		if resp := get(t, c, cb); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
}

func TestReturnURL(t *testing.T) {
	r := newRig(t, nil)
	tests := []struct {
		raw string
		ok  bool
	}{
		{"http://8080-alice.ws.localhost:1234/x?y=1", true},
		{"https://8080-alice.ws.localhost/x", false}, // the wrong scheme for this edge
		{"https://evil.example", false},
		{"//evil.example", false},
		{"/\\evil.example", false},
		{"http://8080-alice.ws.localhost.evil.example/", false},
		{"http://8080-alice.evilws.localhost/", false},
		{"http://evil.example/8080-alice.ws.localhost", false},
		{"javascript:alert(1)", false},
		{"http://user@8080-alice.ws.localhost/", false},
		{"http://auth.ws.localhost/", false},
	}
	for _, tt := range tests {
		if _, _, ok := r.auth.returnURL(tt.raw); ok != tt.ok {
			t.Errorf("returnURL(%q): got %v, want %v", tt.raw, ok, tt.ok)
		}
	}
}

func TestTransferToken(t *testing.T) {
	r := newRig(t, nil)
	// A second instance sharing the store, as two edges share Redis.
	other, err := New(r.auth.o)
	if err != nil {
		t.Fatal(err)
	}
	otherSrv := httptest.NewServer(r.handler(other))
	defer otherSrv.Close()
	_, otherPort, _ := net.SplitHostPort(strings.TrimPrefix(otherSrv.URL, "http://"))

	c := browser()
	cb := r.callback(c, r.toProvider(c, "alice"), "alice")
	withToken := wantRedirect(t, get(t, c, cb), r.url("alice", "/"))
	wantRedirect(t, get(t, c, withToken), "/index.html")
	t.Run("replayed", func(t *testing.T) {
		if resp := get(t, browser(), withToken); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("replayed at another instance", func(t *testing.T) {
		if resp := get(t, browser(), strings.Replace(withToken, ":"+r.port+"/", ":"+otherPort+"/", 1)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("on another workspace", func(t *testing.T) {
		c := browser()
		cb := r.callback(c, r.toProvider(c, "alice"), "alice")
		withToken := wantRedirect(t, get(t, c, cb), r.url("alice", "/"))
		if resp := get(t, browser(), strings.Replace(withToken, "8080-alice.", "8080-bob.", 1)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("expired", func(t *testing.T) {
		c := browser()
		cb := r.callback(c, r.toProvider(c, "alice"), "alice")
		withToken := wantRedirect(t, get(t, c, cb), r.url("alice", "/"))
		r.store.mu.Lock()
		r.store.now = func() time.Time { return time.Now().Add(transferTTL + time.Second) }
		r.store.mu.Unlock()
		defer func() {
			r.store.mu.Lock()
			r.store.now = time.Now
			r.store.mu.Unlock()
		}()
		if resp := get(t, c, withToken); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
}

func TestHostsBeforeLogin(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Directory = directory{"alice": "a1", "bob": "a1"} })
	for _, host := range []string{"8080-carol." + testDomain, "08080-alice." + testDomain, "8080-alice.x." + testDomain, "x." + testDomain} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+r.port+"/", nil)
		req.Host = host + ":" + r.port
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404 before any login", host, resp.StatusCode)
		}
	}
}

type directory map[string]string

func (d directory) Lookup(ws string) (string, bool) { a, ok := d[ws]; return a, ok }

func TestAuthorizerUnavailable(t *testing.T) {
	r := newRig(t, nil)
	c := browser()
	r.login(c, "alice", "alice")
	r.authz.set("alice", "alice", true, true)
	before := r.authz.calls.Load()
	for range 2 {
		if resp := get(t, c, r.url("alice", "/")); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("authorizer down: status %d, want 503", resp.StatusCode)
		}
	}
	if got := r.authz.calls.Load() - before; got != 2 {
		t.Errorf("authorizer calls for 2 requests while it fails: %d, want 2 (nothing cached)", got)
	}
	r.authz.set("alice", "alice", true, false)
	if resp := get(t, c, r.url("alice", "/")); resp.StatusCode != http.StatusOK {
		t.Errorf("authorizer back: status %d, want 200", resp.StatusCode)
	}
	<-r.seen
}

func TestWebSocketOriginAndRevocation(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Recheck = 200 * time.Millisecond })
	c := browser()
	r.login(c, "alice", "alice")
	u, _ := url.Parse(r.url("alice", "/"))
	dial := func(origin string) (*websocket.Conn, *http.Response, error) {
		h := http.Header{}
		for _, ck := range c.Jar.Cookies(u) {
			h.Add("Cookie", ck.Name+"="+ck.Value)
		}
		if origin != "" {
			h.Set("Origin", origin)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return websocket.Dial(ctx, "ws://8080-alice."+testDomain+":"+r.port+"/ws", &websocket.DialOptions{HTTPClient: testnet.Client(), HTTPHeader: h})
	}
	for _, origin := range []string{"http://evil.example", "null", "http://8080-bob." + testDomain + ":" + r.port, ""} {
		_, resp, err := dial(origin)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin %q: got %v %v, want 403", origin, resp, err)
		}
	}
	conn, _, err := dial("http://8080-alice." + testDomain + ":" + r.port)
	if err != nil {
		t.Fatalf("own origin: %v", err)
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := conn.Read(ctx); err != nil || string(b) != "hi" {
		t.Fatalf("echo: %q %v", b, err)
	}
	r.authz.set("alice", "alice", false, false)
	// Revoked: the next recheck closes the connection; a read ends with an error, not a message.
	_, _, err = conn.Read(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after revocation: read %v, want the connection closed by edge", err)
	}
}

// The HTTP authorizer timing out: 503 to the browser, and nothing cached (the next request asks
// again).
func TestHTTPAuthorizerTimeout(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	r := newRig(t, func(o *Options) {
		h, err := NewHTTP(HTTPOptions{URL: slow.URL, Secret: []byte(strings.Repeat("h", 32)), Timeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		o.Authorizer = h
	})
	c := browser()
	r.login(c, "alice", "alice")
	for i := range 2 {
		if resp := get(t, c, r.url("alice", "/")); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("request %d: status %d, want 503", i, resp.StatusCode)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("authorizer calls: %d, want 2 (a timeout is not cached)", n)
	}
}
