package bench

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The harness mints its own tokens from the spec (tokens.md) instead of calling the tokens
// package, so it builds and its tests run whatever state that package is in, and so edge is fed
// tokens from an independent implementation.

// MintRoutable builds a routable token (tokens.md section 1) from a prefix, the 16 random bytes
// and routing keys (c, o, g, p, u, t) with their integer values.
func MintRoutable(prefix string, random [16]byte, keys map[string]int64) (string, error) {
	lines := make([]string, 0, len(keys))
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		lines = append(lines, k+":"+strconv.FormatInt(keys[k], 36))
	}
	payload := strings.Join(lines, "\n")
	if len(payload) > 159 {
		return "", fmt.Errorf("routable payload is %d bytes, at most 159", len(payload))
	}
	raw := append(append(random[:], payload...), byte(len(payload)))
	b64 := base64.RawURLEncoding.EncodeToString(raw)
	head := prefix + b64 + ".01." + zeroPad(strconv.FormatInt(int64(len(b64)), 36), 2)
	crc := strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(head))), 36)
	return head + zeroPad(crc, 7), nil
}

func zeroPad(s string, width int) string {
	return strings.Repeat("0", max(0, width-len(s))) + s
}

// JobJWT is what a CI job token names (tokens.md section 2, newer claim form).
type JobJWT struct {
	Kid          string
	Issuer       string
	Audience     string
	Cell         int64
	Organization int64
	JobID        int64
	TTL          time.Duration
}

// MintJobJWT signs a `glcbt-` job token with RS256.
func MintJobJWT(key *rsa.PrivateKey, j JobJWT, now time.Time) (string, error) {
	claims := jwt.MapClaims{
		"iss": j.Issuer,
		"aud": j.Audience,
		"sub": fmt.Sprintf("gid://gitlab/Ci::Build/%d", j.JobID),
		"jti": fmt.Sprintf("edgebench-%d", now.UnixNano()),
		"iat": now.Unix(),
		"nbf": now.Add(-time.Minute).Unix(),
		"exp": now.Add(j.TTL).Unix(),
		"c":   strconv.FormatInt(j.Cell, 36),
		"o":   strconv.FormatInt(j.Organization, 36),
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = j.Kid
	signed, err := t.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign job jwt: %w", err)
	}
	return "glcbt-" + signed, nil
}

// ParseRSAPrivateKey reads a PEM private key in PKCS#1 or PKCS#8 form.
func ParseRSAPrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("no PEM block in private key")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key is %T, want RSA", k)
	}
	return rk, nil
}

// PublicKeyPEM is the PKIX "PUBLIC KEY" PEM of key, as edge's tokens.job_jwt.keys[].file wants.
func PublicKeyPEM(key *rsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("marshal public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
