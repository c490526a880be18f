package tokens

import "unsafe"

// readOnlyBytes views s as a []byte without copying. Only for callees that neither modify nor
// retain their argument (hash/crc32, crypto/sha256, the src of base64 decoding): they take
// []byte, and []byte(s) would copy every token onto the heap on the hot path.
func readOnlyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
