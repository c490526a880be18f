package tokens

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"testing"
	"time"
)

func TestParseJWKS(t *testing.T) {
	s := newSigners(t)
	p521, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	ecBytes := func(k *ecdsa.PublicKey) (x, y string) {
		raw, err := k.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		size := (len(raw) - 1) / 2
		return b64(raw[1 : 1+size]), b64(raw[1+size:])
	}
	ecX, ecY := ecBytes(&s.ec.PublicKey)
	p521X, p521Y := ecBytes(&p521.PublicKey)
	rsaJWK := map[string]any{"kty": "RSA", "kid": "rsa", "use": "sig", "n": b64(s.rsa.N.Bytes()), "e": b64(big.NewInt(int64(s.rsa.E)).Bytes())}
	ecJWK := map[string]any{"kty": "EC", "kid": "ec", "crv": "P-256", "x": ecX, "y": ecY}
	edJWK := map[string]any{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": b64([]byte(s.ed.Public().(ed25519.PublicKey)))}
	p521JWK := map[string]any{"kty": "EC", "kid": "p521", "alg": "ES512", "crv": "P-521", "x": p521X, "y": p521Y}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for a, b := range m {
			out[a] = b
		}
		out[k] = v
		return out
	}
	set := func(keys ...map[string]any) []byte {
		b, err := json.Marshal(map[string]any{"keys": keys})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	cases := []struct {
		name     string
		data     []byte
		wantKIDs []string // nil: want ErrBadKey
		wantAlgs []string
	}{
		{"all kinds, algs inferred", set(rsaJWK, ecJWK, edJWK, p521JWK), []string{"rsa", "ec", "ed", "p521"}, []string{"RS256", "ES256", "EdDSA", "ES512"}},
		{"explicit alg", set(with(rsaJWK, "alg", "PS256")), []string{"rsa"}, []string{"PS256"}},
		{"padded base64", set(with(edJWK, "x", b64([]byte(s.ed.Public().(ed25519.PublicKey)))+"=")), []string{"ed"}, []string{"EdDSA"}},
		{"encryption key skipped", set(with(rsaJWK, "use", "enc"), ecJWK), []string{"ec"}, []string{"ES256"}},
		{"oct and X25519 skipped", set(map[string]any{"kty": "oct", "k": "c2VjcmV0"}, with(edJWK, "crv", "X25519"), ecJWK), []string{"ec"}, []string{"ES256"}},
		{"secp256k1 skipped", set(with(ecJWK, "crv", "secp256k1"), edJWK), []string{"ed"}, []string{"EdDSA"}},
		{"alg that does not fit the key", set(with(ecJWK, "alg", "RS256")), nil, nil},
		{"point not on the curve", set(with(ecJWK, "y", ecX)), nil, nil},
		{"coordinate too long", set(with(ecJWK, "x", b64(make([]byte, 33)))), nil, nil},
		{"missing n", set(with(rsaJWK, "n", "")), nil, nil},
		{"even exponent", set(with(rsaJWK, "e", b64([]byte{4}))), nil, nil},
		{"Ed25519 key of 31 bytes", set(with(edJWK, "x", b64(make([]byte, 31)))), nil, nil},
		{"not base64", set(with(edJWK, "x", "!!")), nil, nil},
		{"no usable key", set(map[string]any{"kty": "oct", "k": "c2VjcmV0"}), nil, nil},
		{"empty set", set(), nil, nil},
		{"not JSON", []byte("{"), nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys, err := ParseJWKS(c.data)
			if c.wantKIDs == nil {
				if !errors.Is(err, ErrBadKey) {
					t.Errorf("ParseJWKS: got %d keys, %v, want ErrBadKey", len(keys), err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseJWKS: got error %v, want nil", err)
			}
			if len(keys) != len(c.wantKIDs) {
				t.Fatalf("keys: got %d, want %d", len(keys), len(c.wantKIDs))
			}
			for i, k := range keys {
				if k.ID != c.wantKIDs[i] || k.Algorithm != c.wantAlgs[i] {
					t.Errorf("key %d: got %q %q, want %q %q", i, k.ID, k.Algorithm, c.wantKIDs[i], c.wantAlgs[i])
				}
			}
		})
	}

	t.Run("verifies tokens", func(t *testing.T) {
		keys, err := ParseJWKS(set(rsaJWK, ecJWK, edJWK))
		if err != nil {
			t.Fatal(err)
		}
		v, err := NewVerifier(VerifierOptions{Keys: keys, Audience: testAudience})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []MintJobOptions{{Key: s.rsa, Algorithm: "RS256", KID: "rsa"}, {Key: s.ec, Algorithm: "ES256", KID: "ec"}, {Key: s.ed, Algorithm: "EdDSA", KID: "ed"}} {
			o.Audience, o.ExpiresAt = testAudience, time.Now().Add(time.Hour)
			if _, err := v.Verify(context.Background(), mustMintJob(t, o)); err != nil {
				t.Errorf("Verify %s: got error %v, want nil", o.Algorithm, err)
			}
		}
	})
}
