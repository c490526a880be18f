package workspaceauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"time"

	"github.com/gorilla/securecookie"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Cookie names. With TLS the session cookie has the __Host- prefix, so a browser keeps it only
// host-only, Secure and for path /; in the plain-HTTP development mode it cannot.
const (
	sessionCookie       = "edge_session"
	loginCookie         = "edge_login"
	authCookie          = "edge_auth"
	hostPrefix          = "__Host-"
	transferParam       = "edge_transfer"
	sessionCookieSecure = hostPrefix + sessionCookie
	loginCookieSecure   = hostPrefix + loginCookie
	authCookieSecure    = hostPrefix + authCookie
)

// edgeCookie tells whether a cookie name is edge's own, in any of its spellings: such cookies
// never reach a workspace and a workspace cannot set them.
func edgeCookie(name string) bool {
	switch name {
	case sessionCookie, loginCookie, authCookie, sessionCookieSecure, loginCookieSecure, authCookieSecure:
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

// session decodes the session cookie of r, from the verified values when it was seen before.
func (c *codec) session(r *http.Request) (session, bool) {
	ck, err := r.Cookie(c.name(sessionCookie))
	if err != nil {
		return session{}, false
	}
	if s, ok := c.verified.Get(ck.Value); ok {
		return s, true
	}
	var s session
	if c.sc.Decode(c.name(sessionCookie), ck.Value, &s) != nil {
		return session{}, false
	}
	c.verified.Add(ck.Value, s)
	return s, true
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
	ck, err := r.Cookie(c.name(base))
	if err != nil {
		return false
	}
	return c.sc.Decode(c.name(base), ck.Value, v) == nil
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
