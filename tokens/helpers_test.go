package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"
)

// signers holds one private key per algorithm family, generated per test (no fixtures on disk:
// a committed private key would trip secret scanners).
type signers struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
	ed  ed25519.PrivateKey
}

func newSigners(tb testing.TB) signers {
	tb.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	_, d, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return signers{rsa: r, ec: e, ed: d}
}

func (s signers) keys() []Key {
	return []Key{
		{ID: "rsa", Algorithm: "RS256", Public: &s.rsa.PublicKey},
		{ID: "ec", Algorithm: "ES256", Public: &s.ec.PublicKey},
		{ID: "ed", Algorithm: "EdDSA", Public: s.ed.Public()},
	}
}

func publicPEM(tb testing.TB, pub any) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func mustMintJob(tb testing.TB, o MintJobOptions) string {
	tb.Helper()
	s, err := MintJobJWT(o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// unsignedJWT builds header.claims.signature from JSON values, for claim-parsing tests.
func unsignedJWT(tb testing.TB, header, claims any) string {
	tb.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(claims) + ".c2ln"
}

// mintRaw builds a routable token around an arbitrary payload and length byte, for negative
// tests MintRoutable refuses to produce.
func mintRaw(prefix string, payload string, lenByte byte) string {
	raw := make([]byte, 16, 16+len(payload)+1)
	raw = append(raw, payload...)
	raw = append(raw, lenByte)
	b64 := base64.RawURLEncoding.EncodeToString(raw)
	return withCRC(prefix + b64 + ".01." + padBase36(uint64(len(b64)), 2))
}

func withCRC(body string) string { return body + padBase36(uint64(crc32Of(body)), 7) }

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }
