package workspaceauth

import (
	"bufio"
	"context"
	"errors"
	"html"
	"net"
	"net/http"
	"strings"
	"time"
)

// ServeWorkspace serves a workspace host: the host is parsed strictly (404 otherwise, before any
// login), the session cookie must be for exactly this host, the authorizer (cached for the
// recheck interval) must allow the user, and then the request goes to the workspace's agent
// without edge's cookies; a WebSocket must come from the workspace's own origin and is closed
// when a recheck denies.
func (a *Auth) ServeWorkspace(w http.ResponseWriter, r *http.Request) {
	h, ok := ParseHost(r.Host, a.o.Domain)
	if !ok || (r.URL.Host != "" && !strings.EqualFold(r.URL.Host, r.Host)) {
		page(w, http.StatusNotFound, "No such workspace", "")
		return
	}
	if a.o.Directory != nil {
		if _, ok := a.o.Directory.Lookup(h.Workspace); !ok {
			page(w, http.StatusNotFound, "No such workspace", "")
			return
		}
	}
	if token := r.URL.Query().Get(transferParam); token != "" {
		a.exchangeTransfer(w, r, h, token)
		return
	}
	s, ok := a.session(r, h)
	if !ok {
		a.startLogin(w, r, h)
		return
	}
	d, err := a.authz.Authorize(r.Context(), s.User, h.Workspace, h.Port)
	if !a.allowed(w, d, err) {
		return
	}
	upgrade := isWebSocket(r)
	if upgrade && r.Header.Get("Origin") != a.scheme()+"://"+h.Authority {
		page(w, http.StatusForbidden, "Forbidden", "A WebSocket to a workspace must come from the workspace's own page.")
		return
	}
	removeEdgeCookies(r)
	out := &cookieFilter{ResponseWriter: w}
	if !upgrade {
		a.o.Forward(out, r, d.AgentID, h.Port)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	a.metrics.WebSocketOpened()
	defer a.metrics.WebSocketClosed()
	go func() {
		// A panic rechecking is no answer: the WebSocket closes (fail closed).
		defer a.o.Guard.Recover("workspace_recheck", func(bool) { cancel() })
		a.watch(ctx, cancel, s, h)
	}()
	a.o.Forward(out, r.WithContext(ctx), d.AgentID, h.Port)
}

// session is the request's session for this host: signed and encrypted by edge, for exactly
// this host, not expired, issued after the user's last logout. Anything else is no session.
func (a *Auth) session(r *http.Request, h Host) (session, bool) {
	s, ok := a.cookies.session(r)
	if !ok || s.Host != h.Name || time.Now().Unix() > s.Expires {
		return session{}, false
	}
	out, err := a.loggedOutAt(r.Context(), s.User.ID)
	if err != nil {
		a.log.Warn("workspace session: logout marks cannot be read; treating the session as ended", "error", err)
		return session{}, false
	}
	return s, s.Issued > out
}

// allowed answers a denial: 404 for a workspace that does not exist, 403 for a user without
// access, 503 when the authorizer gave no answer (fail closed).
func (a *Auth) allowed(w http.ResponseWriter, d Decision, err error) bool {
	switch {
	case errors.Is(err, ErrNotFound):
		page(w, http.StatusNotFound, "No such workspace", "")
	case err != nil:
		a.log.Warn("workspace authorization unavailable; denied", "error", err)
		page(w, http.StatusServiceUnavailable, "Authorization unavailable", "Whether you may use this workspace cannot be checked right now. Try again in a moment.")
	case !d.Allowed:
		page(w, http.StatusForbidden, "Forbidden", "You do not have access to this workspace.")
	default:
		return true
	}
	return false
}

// watch asks the authorizer again every recheck interval while a WebSocket is open and closes
// it (by ending its context: ReverseProxy then closes both connections) on a denial, or when no
// answer comes (fail closed).
func (a *Auth) watch(ctx context.Context, cancel context.CancelFunc, s session, h Host) {
	tick := time.NewTicker(a.o.Recheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Ask the authorizer itself: a cached answer could be up to one interval old already.
		a.authz.Forget(s.User, h.Workspace)
		d, err := a.authz.Authorize(ctx, s.User, h.Workspace, h.Port)
		if ctx.Err() != nil {
			return
		}
		out, lerr := a.loggedOutAt(ctx, s.User.ID)
		if err == nil && d.Allowed && lerr == nil && s.Issued > out {
			continue
		}
		a.metrics.Revoked()
		a.log.Info("workspace access revoked; closing the WebSocket", "user", s.User.Username, "workspace", h.Workspace,
			"allowed", d.Allowed, "error", errors.Join(err, lerr))
		cancel()
		return
	}
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// removeEdgeCookies keeps edge's own cookies from the workspace: only the others are sent on.
func removeEdgeCookies(r *http.Request) {
	cookies := r.Cookies()
	kept := cookies[:0]
	for _, c := range cookies {
		if !edgeCookie(c.Name) {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(cookies) {
		return
	}
	r.Header.Del("Cookie")
	for _, c := range kept {
		r.AddCookie(c)
	}
}

// cookieFilter keeps a workspace's Set-Cookie from touching edge's cookies or any other host:
// one whose name (or, nameless, whose value) is an edge cookie name is dropped, and every Domain
// attribute is removed, so the app's cookies stay host-only on its own workspace host.
type cookieFilter struct {
	http.ResponseWriter
	wrote bool
}

func (f *cookieFilter) filter() {
	if f.wrote {
		return
	}
	f.wrote = true
	h := f.ResponseWriter.Header()
	all := h["Set-Cookie"]
	if len(all) == 0 {
		return
	}
	kept := all[:0]
	for _, v := range all {
		if v, ok := filterSetCookie(v); ok {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		delete(h, "Set-Cookie")
	} else {
		h["Set-Cookie"] = kept
	}
}

// filterSetCookie reads a Set-Cookie value as a browser does (RFC 6265 section 5.2): the name is
// what precedes the first '=' of the part before the first ';', trimmed, and a part without
// '=' is a cookie with an empty name and that value. It reports false for edge's own names, and
// returns the value without its Domain attributes.
func filterSetCookie(v string) (string, bool) {
	pair, attrs, _ := strings.Cut(v, ";")
	name, value, ok := strings.Cut(pair, "=")
	if !ok {
		name, value = "", name
	}
	if edgeCookie(name) || (strings.Trim(name, " \t") == "" && edgeCookie(value)) {
		return "", false
	}
	if !containsFold(attrs, "domain") {
		return v, true
	}
	var b strings.Builder
	b.WriteString(pair)
	for attr := range strings.SplitSeq(attrs, ";") {
		k, _, _ := strings.Cut(attr, "=")
		if strings.EqualFold(strings.Trim(k, " \t"), "domain") {
			continue
		}
		b.WriteByte(';')
		b.WriteString(attr)
	}
	return b.String(), true
}

// containsFold tells whether s holds sub in any case, without the copy strings.ToLower makes:
// it runs on every Set-Cookie a workspace answers with.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func (f *cookieFilter) WriteHeader(code int) {
	f.filter()
	f.ResponseWriter.WriteHeader(code)
}

func (f *cookieFilter) Write(b []byte) (int, error) {
	f.filter()
	return f.ResponseWriter.Write(b)
}

func (f *cookieFilter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	f.filter()
	return http.NewResponseController(f.ResponseWriter).Hijack()
}

func (f *cookieFilter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// page answers with a small fixed HTML page; nothing from the request is echoed.
func page(w http.ResponseWriter, status int, title, text string) {
	pageHeaders(w, "default-src 'none'")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("<!doctype html><title>" + html.EscapeString(title) + "</title><h1>" +
		html.EscapeString(title) + "</h1><p>" + html.EscapeString(text) + "</p>\n"))
}

// logoutPage is what GET /logout shows: a button that posts the logout from this page, and
// nothing a framing page could click for the user.
func logoutPage(w http.ResponseWriter) {
	pageHeaders(w, "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`<!doctype html><title>Log out</title><h1>Log out</h1>` +
		`<p>Log out of every workspace?</p><form method="post" action="/logout"><button type="submit" id="logout">Log out</button></form>` + "\n"))
}

func pageHeaders(w http.ResponseWriter, csp string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", csp)
}
