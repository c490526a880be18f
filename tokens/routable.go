package tokens

import (
	"encoding/base64"
	"hash/crc32"
	"strings"
)

// Layout of a routable token: <prefix><b64>.01.<len><crc> (see spec/tokens.md §1).
const (
	routableVersion = "01"
	randomLen       = 16
	crcLen          = 7
	lenFieldLen     = 2
	tailLen         = len(".01.") + lenFieldLen // what sits between b64 and crc
	minB64Len       = 27
	maxB64Len       = 300
	maxPrefixLen    = 20
	maxPayloadLen   = 159
	minRoutableLen  = minB64Len + tailLen + crcLen
	maxRoutableLen  = 333
	maxDecodedLen   = maxB64Len * 6 / 8
)

// Routable is what a routable token says about where it belongs.
type Routable struct {
	Prefix string // e.g. "glrt-t2_"; not secret
	Keys   Keys
}

// notRoutable is a ParseRoutable failure reason. It is a string constant so that returning it
// costs no allocation on the hot path, and its text never contains the token.
type notRoutable string

func (e notRoutable) Error() string { return string(e) }
func (e notRoutable) Unwrap() error { return ErrNotRoutable }

const (
	reasonEmpty         notRoutable = "empty"
	reasonTooShort      notRoutable = "too short"
	reasonTooLong       notRoutable = "too long"
	reasonCRC           notRoutable = "crc mismatch"
	reasonFormat        notRoutable = "bad format"
	reasonVersion       notRoutable = "unsupported version"
	reasonLength        notRoutable = "bad length"
	reasonPrefix        notRoutable = "prefix too long"
	reasonBase64        notRoutable = "bad base64"
	reasonPayloadLength notRoutable = "payload length mismatch"
	reasonPayload       notRoutable = "bad payload"
)

// ParseRoutable decodes a routable token. Any failure returns an error wrapping ErrNotRoutable
// whose message is a short reason (e.g. "crc mismatch"); it never contains the token.
// A valid token costs no heap allocation when its prefix is a well-known GitLab prefix.
func ParseRoutable(token string) (Routable, error) {
	n := len(token)
	switch {
	case n == 0:
		return Routable{}, reasonEmpty
	case n < minRoutableLen:
		return Routable{}, reasonTooShort
	case n > maxRoutableLen:
		return Routable{}, reasonTooLong
	}
	body, crc := token[:n-crcLen], token[n-crcLen:]
	if want, ok := parseBase36(crc); !ok || want != uint64(crc32Of(body)) {
		return Routable{}, reasonCRC
	}
	// body ends with ".01.<len>"; the unversioned form ends with "<b64>.<len>".
	if body[len(body)-3] != '.' {
		return Routable{}, reasonFormat
	}
	if body[len(body)-tailLen] != '.' || body[len(body)-5:len(body)-3] != routableVersion {
		return Routable{}, reasonVersion
	}
	b64Len, ok := parseBase36(body[len(body)-lenFieldLen:])
	head := body[:len(body)-tailLen]
	if !ok || b64Len < minB64Len || b64Len > maxB64Len || b64Len > uint64(len(head)) {
		return Routable{}, reasonLength
	}
	prefix, b64 := head[:len(head)-int(b64Len)], head[len(head)-int(b64Len):]
	if len(prefix) > maxPrefixLen {
		return Routable{}, reasonPrefix
	}
	var buf [maxDecodedLen]byte
	raw, ok := decodeB64(buf[:], b64)
	if !ok {
		return Routable{}, reasonBase64
	}
	payload := raw[randomLen : len(raw)-1]
	if int(raw[len(raw)-1]) != len(payload) {
		return Routable{}, reasonPayloadLength
	}
	keys, ok := parsePayload(payload)
	if !ok {
		return Routable{}, reasonPayload
	}
	return Routable{Prefix: internPrefix(prefix), Keys: keys}, nil
}

// decodeB64 decodes unpadded base64url into dst without heap allocation.
func decodeB64(dst []byte, s string) ([]byte, bool) {
	n, err := base64.RawURLEncoding.Decode(dst, readOnlyBytes(s))
	// The decoder skips \r and \n; a short result means the input had some.
	if err != nil || n != base64.RawURLEncoding.DecodedLen(len(s)) {
		return nil, false
	}
	return dst[:n], true
}

// parsePayload reads "k:v" lines joined by "\n". Unknown keys are skipped (GitLab may add keys),
// known keys must hold lower-case base36 and appear once.
func parsePayload(p []byte) (Keys, bool) {
	var k Keys
	for {
		line := p
		i := indexByte(p, '\n')
		if i >= 0 {
			line, p = p[:i], p[i+1:]
		}
		colon := indexByte(line, ':')
		if colon < 1 || colon == len(line)-1 {
			return Keys{}, false
		}
		if colon == 1 {
			if bit := keyBit(line[0]); bit != 0 {
				v, ok := parseBase36(line[2:])
				if !ok || k.Has(bit) {
					return Keys{}, false
				}
				k.put(bit, v)
			}
		}
		if i < 0 {
			return k, true
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// crc32Of is zlib's CRC-32 (IEEE) over a string.
func crc32Of(s string) uint32 { return crc32.ChecksumIEEE(readOnlyBytes(s)) }

// internPrefix returns well-known prefixes as constants, so a Routable neither allocates nor
// keeps the token's memory alive through a substring.
func internPrefix(p string) string {
	switch p {
	case "":
		return ""
	case "glrt-":
		return "glrt-"
	case "glrt-t1_":
		return "glrt-t1_"
	case "glrt-t2_":
		return "glrt-t2_"
	case "glrt-t3_":
		return "glrt-t3_"
	case "glrtr-":
		return "glrtr-"
	case "glpat-":
		return "glpat-"
	case "glcbt-":
		return "glcbt-"
	case "gldt-":
		return "gldt-"
	case "glptt-":
		return "glptt-"
	case "glft-":
		return "glft-"
	case "glimt-":
		return "glimt-"
	case "glagent-":
		return "glagent-"
	case "gloas-":
		return "gloas-"
	case "glsoat-":
		return "glsoat-"
	case "glffct-":
		return "glffct-"
	}
	return strings.Clone(p)
}
