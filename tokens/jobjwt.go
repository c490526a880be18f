package tokens

import "strings"

const (
	jobTokenPrefix = "glcbt-"
	maxJWTLen      = 16 << 10
)

// JobJWT returns the JWT part of a CI job token. It finds "glcbt-" (an instance may put its own
// prefix before it) and returns what follows when that looks like a JWT: three non-empty base64url
// segments separated by dots. ok is false for anything else, e.g. an opaque legacy job token.
// It only looks at the shape; Verify or ParseJobClaimsUnverified read the content.
func JobJWT(token string) (jwt string, ok bool) {
	if len(token) > maxJWTLen+maxPrefixLen+len(jobTokenPrefix) {
		return "", false
	}
	dot := strings.IndexByte(token, '.')
	if dot < 0 {
		return "", false
	}
	// The last "glcbt-" before the first dot, so an instance prefix that itself contains
	// "glcbt-" does not end up inside the JWT.
	i := strings.LastIndex(token[:dot], jobTokenPrefix)
	if i < 0 {
		return "", false
	}
	jwt = token[i+len(jobTokenPrefix):]
	if !looksLikeJWT(jwt) {
		return "", false
	}
	return jwt, true
}

func looksLikeJWT(s string) bool {
	if len(s) > maxJWTLen {
		return false
	}
	segments, segLen := 1, 0
	for i := range len(s) {
		c := s[i]
		switch {
		case c == '.':
			if segLen == 0 {
				return false
			}
			segments++
			segLen = 0
		case isBase64URL(c):
			segLen++
		default:
			return false
		}
	}
	return segments == 3 && segLen > 0
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
