// Package redirect writes every Location edge sends: an absolute URL whose scheme and host edge
// chose, or a path that a browser resolves on the origin it is on. Nothing a client sent can
// turn one into a way off that origin.
package redirect

import (
	"net/http"
	"net/url"
	"strings"
)

// MaxLocal bounds a local path kept for a redirect: a longer one is replaced by "/".
const MaxLocal = 2048

// Local returns target when a browser resolves it on the origin it is on, exactly as written:
// a path of at most MaxLocal bytes beginning with one "/" not followed by "/" or "\", with no
// backslash, dot segment (plain or %2e), control character, space, non-ASCII byte, fragment or
// '%' without two hex digits.
// Anything else is "/".
func Local(target string) string {
	if !isLocal(target) {
		return "/"
	}
	return target
}

func isLocal(target string) bool {
	if len(target) == 0 || len(target) > MaxLocal || target[0] != '/' {
		return false
	}
	if len(target) > 1 && (target[1] == '/' || target[1] == '\\') {
		return false
	}
	path, _, _ := strings.Cut(target, "?")
	for i := 0; i < len(target); i++ {
		c := target[i]
		if c <= ' ' || c >= 0x7f || c == '#' || (c == '\\' && i < len(path)) {
			return false
		}
		if c == '%' && (i+2 >= len(target) || !isHex(target[i+1]) || !isHex(target[i+2])) {
			return false
		}
	}
	for seg := range strings.SplitSeq(path[1:], "/") {
		if isDots(seg) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// isDots tells whether a path segment is "." or "..", in any spelling with %2e.
func isDots(seg string) bool {
	if len(seg) > 6 {
		return false
	}
	s := strings.ReplaceAll(strings.ToLower(seg), "%2e", ".")
	return s == "." || s == ".."
}

// Absolute is scheme://authority followed by Local(target); ok is false when the scheme is not
// http or https or the authority is not a plain host name or IP address with an optional port.
func Absolute(scheme, authority, target string) (string, bool) {
	if (scheme != "http" && scheme != "https") || !isAuthority(authority) {
		return "", false
	}
	return scheme + "://" + authority + Local(target), true
}

// isAuthority accepts host[:port]: letters, digits, '-', '.' and '_', or a bracketed IPv6
// address, then an optional decimal port.
func isAuthority(a string) bool {
	host, port := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return false
		}
		for _, c := range a[1:end] {
			if !(c == ':' || c == '.' || isAlnum(c)) {
				return false
			}
		}
		if rest := a[end+1:]; rest != "" {
			if rest[0] != ':' {
				return false
			}
			port = rest[1:]
			if port == "" {
				return false
			}
		}
		host = "x"
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 {
		host, port = a[:i], a[i+1:]
		if port == "" {
			return false
		}
	}
	if host == "" || len(host) > 253 || len(port) > 5 {
		return false
	}
	for _, c := range host {
		if !(c == '-' || c == '.' || c == '_' || isAlnum(c)) {
			return false
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isAlnum(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Safe tells whether a Location is one edge may write: Local leaves it as it is, or it is an
// absolute http(s) URL with a plain authority, no user information and a local path.
func Safe(loc string) bool {
	if strings.HasPrefix(loc, "/") {
		return isLocal(loc)
	}
	u, err := url.Parse(loc)
	if err != nil || u.User != nil || u.Opaque != "" || u.Fragment != "" || (u.Scheme != "http" && u.Scheme != "https") || !isAuthority(u.Host) {
		return false
	}
	rest := strings.TrimPrefix(loc, u.Scheme+"://"+u.Host)
	if rest == loc {
		return false
	}
	return rest == "" || isLocal(rest) || (rest[0] == '?' && isLocal("/"+rest))
}

// Write answers with status (a 3xx) and Location: loc. A Location that is not Safe is a bug in
// edge, never sent: the answer is 500.
func Write(w http.ResponseWriter, status int, loc string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if !Safe(loc) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("edge refused to write an unsafe redirect\n"))
		return
	}
	h.Set("Location", loc)
	w.WriteHeader(status)
}
