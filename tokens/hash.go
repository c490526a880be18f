package tokens

import "crypto/sha256"

// tokenHash is the cache key of a token: never the token itself.
func tokenHash(token string) [sha256.Size]byte {
	return sha256.Sum256(readOnlyBytes(token))
}
