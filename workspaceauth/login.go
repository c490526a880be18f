package workspaceauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"gitlab.com/edge/edge/internal/redirect"
)

// How long the steps of a login may take.
const (
	loginTTL    = 10 * time.Minute // from the workspace host to the provider's callback
	transferTTL = 30 * time.Second // from the callback to the workspace host
)

// ticket is what a login remembers server side, under its single-use state: the URL that was
// asked for (there is no return-URL parameter anywhere), the PKCE verifier, the nonce, and a hash
// of the pre-login cookie that binds it to one browser.
type ticket struct {
	Return   string `json:"r"`
	Verifier string `json:"v,omitempty"`
	Nonce    string `json:"n,omitempty"`
	Binding  []byte `json:"b,omitempty"`
	// Browser is a hash of the binding cookie set on the workspace host when the login started:
	// the transfer token is spent only by the browser that holds it.
	Browser []byte `json:"w"`
}

// transfer is what a transfer token stands for: a user, for exactly one workspace host.
type transfer struct {
	User    User   `json:"u"`
	Host    string `json:"h"`
	Browser []byte `json:"w"`
}

// startLogin sends a browser without a session to the auth host, with a single-use login ticket
// that remembers the URL it asked for (its path only when redirect.Local keeps it) and the
// browser: a host-only binding cookie set here, which the transfer token will be checked against.
func (a *Auth) startLogin(w http.ResponseWriter, r *http.Request, h Host) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		page(w, http.StatusUnauthorized, "Log in first", "This request needs a session; open the workspace in a browser to log in.")
		return
	}
	// A browser keeps its binding across logins in several tabs: a new one would strand the
	// logins the other tabs started.
	bind := valueOf(r.Cookie(a.cookies.name(bindCookie)))
	if !isToken(bind) {
		bind = randomToken()
	}
	sum := sha256.Sum256([]byte(bind))
	t := ticket{Return: a.scheme() + "://" + h.Authority + redirect.Local(r.URL.RequestURI()), Browser: sum[:]}
	id := randomToken()
	if !a.store(w, r, "login:"+id, t, loginTTL) {
		return
	}
	http.SetCookie(w, a.cookies.cookie(bindCookie, bind, loginTTL))
	a.redirect(w, a.scheme(), a.authHost, "/oauth/start?login="+id)
}

// redirect sends the browser to scheme://authority followed by the local part of target.
func (a *Auth) redirect(w http.ResponseWriter, scheme, authority, target string) {
	loc, ok := redirect.Absolute(scheme, authority, target)
	if !ok {
		a.log.Error("workspace login: refused to redirect to an unsafe host", "host", authority)
		page(w, http.StatusBadRequest, "Bad request", "")
		return
	}
	redirect.Write(w, http.StatusFound, loc)
}

// store puts a login value counted against the request's client, and answers for it when the
// store refuses: 429 when the client or all clients hold the limit, 503 when it is unreachable.
func (a *Auth) store(w http.ResponseWriter, r *http.Request, key string, v any, ttl time.Duration) bool {
	client := clientOf(r)
	b, err := json.Marshal(v)
	if err == nil {
		err = a.o.Store.Put(r.Context(), key, client, b, ttl)
	}
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrBusy):
		a.metrics.Login("busy")
		if a.busyLog.allow(time.Now()) {
			a.log.Warn("workspace login refused: too many logins in progress", "client", client, "host", r.Host)
		}
		w.Header().Set("Retry-After", "60")
		page(w, http.StatusTooManyRequests, "Too many logins", "Too many logins are in progress from your network. Try again in a minute.")
	default:
		a.log.Error("workspace login: cannot store a login value", "error", err)
		page(w, http.StatusServiceUnavailable, "Login unavailable", "Try again in a moment.")
	}
	return false
}

// ServeAuth serves the auth host: /oauth/start, /oauth/callback and /logout, and a fixed page
// for anything else.
func (a *Auth) ServeAuth(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/oauth/start":
		a.begin(w, r)
	case "/oauth/callback":
		a.callback(w, r)
	case "/logout":
		a.logout(w, r)
	default:
		page(w, http.StatusNotFound, "Nothing here", "This host only handles workspace logins.")
	}
}

// begin spends the login ticket, binds a new state to this browser with a pre-login cookie,
// and sends it to the provider.
func (a *Auth) begin(w http.ResponseWriter, r *http.Request) {
	var t ticket
	if err := a.take(r, "login:"+r.URL.Query().Get("login"), &t); err != nil {
		a.metrics.Login("bad_ticket")
		page(w, http.StatusBadRequest, "Login expired", "Open the workspace URL again to log in.")
		return
	}
	rp, err := a.provider.get(r.Context())
	if err != nil {
		a.metrics.Login("provider_error")
		a.log.Error("workspace login: the OpenID provider cannot be reached", "error", err)
		page(w, http.StatusServiceUnavailable, "Login unavailable", "The identity provider cannot be reached; try again in a moment.")
		return
	}
	// One binding per browser, kept across logins, so logins started in two tabs both end.
	binding := valueOf(r.Cookie(a.cookies.name(loginCookie)))
	if !isToken(binding) {
		binding = randomToken()
	}
	sum := sha256.Sum256([]byte(binding))
	t.Verifier, t.Nonce, t.Binding = randomToken(), randomToken(), sum[:]
	state := randomToken()
	if !a.store(w, r, "state:"+state, t, loginTTL) {
		return
	}
	http.SetCookie(w, a.cookies.cookie(loginCookie, binding, loginTTL))
	redirect.Write(w, http.StatusFound, rp.authURL(state, t.Verifier, t.Nonce))
}

// callback checks the state (single use, this browser's), exchanges the code with the PKCE
// verifier, verifies the ID token and its nonce, and sends the browser to the workspace host it
// asked for with a transfer token for exactly that host.
func (a *Auth) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		a.metrics.Login("denied")
		page(w, http.StatusForbidden, "Login refused", "The identity provider did not log you in.")
		return
	}
	var t ticket
	if err := a.take(r, "state:"+q.Get("state"), &t); err != nil {
		a.metrics.Login("bad_state")
		page(w, http.StatusBadRequest, "Login expired or already used", "Open the workspace URL again to log in.")
		return
	}
	ck, err := r.Cookie(a.cookies.name(loginCookie))
	sum := sha256.Sum256([]byte(valueOf(ck, err)))
	if err != nil || subtle.ConstantTimeCompare(sum[:], t.Binding) != 1 {
		a.metrics.Login("other_browser")
		page(w, http.StatusBadRequest, "Login started elsewhere", "This login was started in another browser. Open the workspace URL again to log in.")
		return
	}
	rp, err := a.provider.get(r.Context())
	if err != nil {
		a.metrics.Login("provider_error")
		page(w, http.StatusServiceUnavailable, "Login unavailable", "The identity provider cannot be reached; try again in a moment.")
		return
	}
	user, err := rp.exchange(r.Context(), a.o.HTTPClient, q.Get("code"), t.Verifier, t.Nonce)
	if err != nil {
		a.metrics.Login("token_error")
		a.log.Warn("workspace login: code exchange or ID token refused", "error", err)
		page(w, http.StatusBadRequest, "Login failed", "The identity provider's answer could not be verified. Open the workspace URL again to log in.")
		return
	}
	back, h, ok := a.returnURL(t.Return)
	if !ok {
		a.metrics.Login("bad_return")
		page(w, http.StatusBadRequest, "Logged in", "There is no workspace to return to.")
		return
	}
	token := randomToken()
	if !a.store(w, r, "transfer:"+token, transfer{User: user, Host: h.Name, Browser: t.Browser}, transferTTL) {
		return
	}
	if v, err := a.cookies.encode(authCookie, session{User: user, Host: a.authHost, Issued: time.Now().UnixNano(), Expires: time.Now().Add(a.o.SessionTTL).Unix()}); err == nil {
		http.SetCookie(w, a.cookies.cookie(authCookie, v, a.o.SessionTTL))
	}
	a.metrics.Login("ok")
	a.log.Info("workspace login", "user", user.Username, "workspace", h.Workspace)
	q2 := back.Query()
	q2.Set(transferParam, token)
	back.RawQuery = q2.Encode()
	a.redirect(w, a.scheme(), back.Host, back.RequestURI())
}

// returnURL accepts only a URL on a workspace host of this domain, with this edge's scheme.
func (a *Auth) returnURL(raw string) (*url.URL, Host, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != a.scheme() || u.User != nil || u.Opaque != "" || u.Fragment != "" {
		return nil, Host{}, false
	}
	h, ok := ParseHost(u.Host, a.o.Domain)
	return u, h, ok
}

// exchangeTransfer spends a transfer token on the workspace host it was made for, in the browser
// that started the login there (its binding cookie), and sets that host's session cookie, then
// sends the browser to the same URL without the token. Any other browser gets 400 and nothing
// set: a link an attacker sends cannot give a victim the attacker's session.
func (a *Auth) exchangeTransfer(w http.ResponseWriter, r *http.Request, h Host, token string) {
	var t transfer
	if err := a.take(r, "transfer:"+token, &t); err != nil || t.Host != h.Name {
		page(w, http.StatusBadRequest, "Login link expired or already used", "Open the workspace URL again to log in.")
		return
	}
	sum := sha256.Sum256([]byte(valueOf(r.Cookie(a.cookies.name(bindCookie)))))
	if len(t.Browser) != len(sum) || subtle.ConstantTimeCompare(sum[:], t.Browser) != 1 {
		a.metrics.Login("other_browser")
		a.log.Warn("workspace login: a transfer token was brought by another browser", "host", h.Name, "client", clientOf(r))
		page(w, http.StatusBadRequest, "Login started elsewhere", "This login link belongs to another browser. Open the workspace URL again to log in.")
		return
	}
	now := time.Now()
	v, err := a.cookies.encode(sessionCookie, session{User: t.User, Host: h.Name, Issued: now.UnixNano(), Expires: now.Add(a.o.SessionTTL).Unix()})
	if err != nil {
		page(w, http.StatusInternalServerError, "Login failed", "Open the workspace URL again to log in.")
		return
	}
	http.SetCookie(w, a.cookies.cookie(sessionCookie, v, a.o.SessionTTL))
	redirect.Write(w, http.StatusFound, afterLogin(r.URL))
}

// afterLogin is where a browser goes once its session is set: the URL it asked for, without the
// transfer token, as a local path (redirect.Local: "/" when the path could lead off the host).
func afterLogin(asked *url.URL) string {
	u := *asked
	q := u.Query()
	q.Del(transferParam)
	u.RawQuery = q.Encode()
	u.Scheme, u.Host = "", ""
	return redirect.Local(u.RequestURI())
}

// logout ends the user's sessions on every workspace host (within the recheck interval, on every
// instance) and the auth host's own. Only a POST from the auth host's own page does: a GET shows
// that page, with its button, so no link or other site (a workspace app included) logs anyone out.
func (a *Auth) logout(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		logoutPage(w)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		page(w, http.StatusMethodNotAllowed, "Method not allowed", "")
		return
	}
	if !a.sameOrigin(r) {
		a.metrics.Login("logout_refused")
		page(w, http.StatusForbidden, "Logout refused", "A logout must come from this page's own button.")
		return
	}
	var s session
	if a.cookies.decode(r, authCookie, &s) && s.User.ID != "" {
		now := strconv.FormatInt(time.Now().UnixNano(), 10)
		// A later logout overwrites: Put refuses an existing key, so take it first.
		_, _ = a.o.Store.Take(r.Context(), "logout:"+s.User.ID)
		if err := a.o.Store.Put(r.Context(), "logout:"+s.User.ID, "", []byte(now), a.o.SessionTTL); err != nil {
			a.log.Error("workspace logout: cannot record it", "error", err)
			page(w, http.StatusServiceUnavailable, "Logout failed", "Try again in a moment.")
			return
		}
		a.logouts.remove(s.User.ID)
		a.log.Info("workspace logout", "user", s.User.Username)
	}
	http.SetCookie(w, a.cookies.cookie(authCookie, "", -1))
	page(w, http.StatusOK, "Logged out", "You are logged out of every workspace.")
}

// sameOrigin: the request's Origin is the auth host's own, or, from a browser that sends no
// Origin, Sec-Fetch-Site says same-origin. A request with neither is refused.
func (a *Auth) sameOrigin(r *http.Request) bool {
	if o := r.Header.Values("Origin"); len(o) > 0 {
		return len(o) == 1 && o[0] == a.authOrigin
	}
	f := r.Header.Values("Sec-Fetch-Site")
	return len(f) == 1 && f[0] == "same-origin"
}

func (a *Auth) take(r *http.Request, key string, v any) error {
	if len(key) < 40 || len(key) > 80 {
		return ErrSpent
	}
	b, err := a.o.Store.Take(r.Context(), key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.Join(ErrSpent, err)
	}
	return nil
}

func valueOf(ck *http.Cookie, err error) string {
	if err != nil {
		return ""
	}
	return ck.Value
}

// isToken tells whether s looks like a randomToken: 43 base64url characters.
func isToken(s string) bool {
	if len(s) != 43 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
