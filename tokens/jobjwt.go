package tokens

import "strings"

const (
	jobTokenPrefix = "glcbt-"
	maxJWTLen      = 16 << 10
)

// JobJWT returns the JWT part of a CI job token. It finds "glcbt-" (an instance may put its own
// prefix before it) and returns what follows when that looks like a JWT: three base64url segments
// separated by dots, the first two non-empty. The signature may be empty so that an unsigned
// (alg "none") token is recognised as a JWT and refused by Verify, not mistaken for an opaque token. ok is false for anything else, e.g. an opaque legacy job token.
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
	for segment := range 3 {
		end := len(s) // the last segment runs to the end and may hold no dot
		if segment < 2 {
			end = strings.IndexByte(s, '.')
		}
		if end < 0 || (end == 0 && segment < 2) {
			return false
		}
		for i := range end {
			if !isBase64URL(s[i]) {
				return false
			}
		}
		if segment < 2 {
			s = s[end+1:]
		}
	}
	return true
}

// The base64url alphabet (A-Z a-z 0-9 - _) as a bit set over bytes 0-63 and 64-127: one shift
// and mask per byte instead of five range comparisons; JWTs are long.
const (
	base64URLLow  uint64 = 1<<'-' | 0x3ff<<'0'
	base64URLHigh uint64 = 0x3ffffff<<('A'-64) | 1<<('_'-64) | 0x3ffffff<<('a'-64)
)

func isBase64URL(c byte) bool {
	if c < 64 {
		return base64URLLow>>c&1 != 0
	}
	return c < 128 && base64URLHigh>>(c-64)&1 != 0
}
