package tunnel

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
)

func hashReader(r io.Reader) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return n, hex.EncodeToString(h.Sum(nil)), err
}
