package tokens

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// MintRoutable builds a routable token with the given prefix, random part and keys, exactly as
// GitLab does: payload lines sorted by key, values in base36, CRC-32 over everything before it.
// It is for tests and tools; real tokens are minted by GitLab.
func MintRoutable(prefix string, random [16]byte, keys Keys) (string, error) {
	if len(prefix) > maxPrefixLen {
		return "", fmt.Errorf("mint routable token: prefix longer than %d bytes", maxPrefixLen)
	}
	if strings.ContainsRune(prefix, '.') {
		return "", fmt.Errorf("mint routable token: prefix contains '.'")
	}
	var payload []byte
	for i := range len(keyOrder) {
		v, ok := keys.Get(keyBit(keyOrder[i]))
		if !ok {
			continue
		}
		if len(payload) > 0 {
			payload = append(payload, '\n')
		}
		payload = append(payload, keyOrder[i], ':')
		payload = append(payload, formatBase36(v)...)
	}
	if len(payload) == 0 {
		return "", fmt.Errorf("mint routable token: no routing keys")
	}
	if len(payload) > maxPayloadLen {
		return "", fmt.Errorf("mint routable token: payload longer than %d bytes", maxPayloadLen)
	}
	raw := make([]byte, 0, randomLen+len(payload)+1)
	raw = append(raw, random[:]...)
	raw = append(raw, payload...)
	raw = append(raw, byte(len(payload)))
	b64 := base64.RawURLEncoding.EncodeToString(raw)
	body := prefix + b64 + "." + routableVersion + "." + padBase36(uint64(len(b64)), lenFieldLen)
	return body + padBase36(uint64(crc32Of(body)), crcLen), nil
}

func padBase36(v uint64, width int) string {
	s := formatBase36(v)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}
