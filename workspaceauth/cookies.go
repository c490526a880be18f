package workspaceauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/securecookie"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Cookie names. With TLS the session cookie has the __Host- prefix, so a browser keeps it only
// host-only, Secure and for path /; in the plain-HTTP development mode it cannot.
const (
	sessionCookie = "edge_session" // the workspace host's session
	bindCookie    = "edge_bind"    // the workspace host's login binding: who may spend a transfer token
	loginCookie   = "edge_login"   // the auth host's pre-login binding of a state
	authCookie    = "edge_auth"    // the auth host's own session, for logout
	hostPrefix    = "__Host-"
	transferParam = "edge_transfer"
)

// edgeCookie tells whether a cookie name is edge's own, in any spelling a browser or a server
// could take for it: any case, quoted, with whitespace, behind __Host- or __Secure-. Such
// cookies never reach a workspace and a workspace cannot set them.
func edgeCookie(name string) bool {
	n := strings.ToLower(strings.Trim(name, " \t\""))
	for {
		if rest, ok := strings.CutPrefix(n, "__host-"); ok {
			n = rest
		} else if rest, ok := strings.CutPrefix(n, "__secure-"); ok {
			n = rest
		} else {
			break
		}
	}
	switch strings.Trim(n, " \t\"") {
	case sessionCookie, bindCookie, loginCookie, authCookie:
		return true
	}
	return false
}

// session is what a workspace host's cookie carries: who, for exactly which host, until when.
type session struct {
	User    User   `json:"u"`
	Host    string `json:"h"`
	Issued  int64  `json:"i"`
	Expires int64  `json:"e"`
}

// codec signs (HMAC-SHA256) and encrypts (AES-256) cookie values with gorilla/securecookie; the
// cookie name is part of what is signed, so a value cannot move to another cookie.
type codec struct {
	sc     *securecookie.SecureCookie
	secure bool
	// verified keeps session values already verified and decrypted with this codec's key, so a
	// busy session pays the HMAC, AES and JSON once, not on every request.
	verified *lru.Cache[string, session]
}

func newCodec(key []byte, ttl time.Duration, secure bool) *codec {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	sc := securecookie.New(derive("edge workspace cookie signing"), derive("edge workspace cookie encryption"))
	sc.MaxAge(int(ttl / time.Second))
	sc.SetSerializer(securecookie.JSONEncoder{})
	verified, _ := lru.New[string, session](10_000)
	return &codec{sc: sc, secure: secure, verified: verified}
}

// session decodes the session cookie of r, from the verified values when it was seen before. A
// request may carry several cookies of that name (another path's, a nameless one a browser sends
// as the bare name): the first that edge signed counts.
func (c *codec) session(r *http.Request) (session, bool) {
	for _, ck := range r.CookiesNamed(c.name(sessionCookie)) {
		if s, ok := c.verified.Get(ck.Value); ok {
			return s, true
		}
		var s session
		if ck.Value == "" || c.sc.Decode(c.name(sessionCookie), ck.Value, &s) != nil {
			continue
		}
		c.verified.Add(ck.Value, s)
		return s, true
	}
	return session{}, false
}

func (c *codec) name(base string) string {
	if c.secure {
		return hostPrefix + base
	}
	return base
}

func (c *codec) encode(base string, v any) (string, error) {
	return c.sc.Encode(c.name(base), v)
}

func (c *codec) decode(r *http.Request, base string, v any) bool {
	for _, ck := range r.CookiesNamed(c.name(base)) {
		if ck.Value != "" && c.sc.Decode(c.name(base), ck.Value, v) == nil {
			return true
		}
	}
	return false
}

// cookie is a host-only cookie: no Domain, Path /, HttpOnly, SameSite=Lax, Secure with TLS.
func (c *codec) cookie(base, value string, maxAge time.Duration) *http.Cookie {
	ck := &http.Cookie{
		Name: c.name(base), Value: value, Path: "/", HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(maxAge / time.Second),
	}
	if maxAge < 0 {
		ck.MaxAge, ck.Value = -1, ""
	}
	return ck
}
