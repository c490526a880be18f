package tokens

import "crypto/sha256"

// tokenHash is the cache key of a token: never the token itself. Copying into a stack buffer
// avoids the heap allocation of []byte(token) for any realistic JWT.
func tokenHash(token string) [sha256.Size]byte {
	var buf [4096]byte
	if len(token) > len(buf) {
		return sha256.Sum256([]byte(token))
	}
	n := copy(buf[:], token)
	return sha256.Sum256(buf[:n])
}
