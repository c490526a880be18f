package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// ParseJWKS reads a JWK Set ({"keys":[...]}) of RSA, EC (P-256, P-384, P-521) and OKP Ed25519
// keys. A key's algorithm is its "alg", or else inferred: RSA -> RS256, P-256 -> ES256,
// P-384 -> ES384, P-521 -> ES512, Ed25519 -> EdDSA. Keys for encryption ("use":"enc") and key
// types or curves it does not support (oct, X25519, ...) are skipped; a malformed supported key
// is an error, and so is a set with no usable key.
func ParseJWKS(data []byte) ([]Key, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("%w: JWKS is not valid JSON: %w", ErrBadKey, err)
	}
	var keys []Key
	for i, j := range set.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		k, supported, err := j.key()
		if err != nil {
			return nil, fmt.Errorf("%w: JWKS key %d (kid %q): %w", ErrBadKey, i, j.Kid, err)
		}
		if !supported {
			continue
		}
		if err := checkKey(k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: JWKS has no usable signing key", ErrBadKey)
	}
	return keys, nil
}

func (j jwk) key() (k Key, supported bool, err error) {
	k = Key{ID: j.Kid, Algorithm: j.Alg}
	switch j.Kty {
	case "RSA":
		k.Public, err = j.rsaKey()
		if k.Algorithm == "" {
			k.Algorithm = "RS256"
		}
	case "EC":
		curve, alg := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[j.Crv],
			map[string]string{"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}[j.Crv]
		if curve == nil {
			return Key{}, false, nil
		}
		k.Public, err = j.ecKey(curve)
		if k.Algorithm == "" {
			k.Algorithm = alg
		}
	case "OKP":
		if j.Crv != "Ed25519" {
			return Key{}, false, nil
		}
		var x []byte
		if x, err = b64Field("x", j.X); err == nil && len(x) != ed25519.PublicKeySize {
			err = fmt.Errorf("x is %d bytes, want %d", len(x), ed25519.PublicKeySize)
		}
		k.Public = ed25519.PublicKey(x)
		if k.Algorithm == "" {
			k.Algorithm = "EdDSA"
		}
	default:
		return Key{}, false, nil
	}
	return k, err == nil, err
}

func (j jwk) rsaKey() (*rsa.PublicKey, error) {
	n, err := b64Field("n", j.N)
	if err != nil {
		return nil, err
	}
	e, err := b64Field("e", j.E)
	if err != nil {
		return nil, err
	}
	if len(e) > 4 {
		return nil, fmt.Errorf("e too large")
	}
	exp := int(new(big.Int).SetBytes(e).Int64())
	if exp < 3 || exp%2 == 0 {
		return nil, fmt.Errorf("bad exponent %d", exp)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}, nil
}

func (j jwk) ecKey(curve elliptic.Curve) (*ecdsa.PublicKey, error) {
	size := (curve.Params().BitSize + 7) / 8
	point := make([]byte, 1+2*size)
	point[0] = 4 // uncompressed
	for i, f := range []struct{ name, v string }{{"x", j.X}, {"y", j.Y}} {
		b, err := b64Field(f.name, f.v)
		if err != nil {
			return nil, err
		}
		if len(b) > size {
			return nil, fmt.Errorf("%s is %d bytes, want %d", f.name, len(b), size)
		}
		copy(point[1+i*size+size-len(b):1+(i+1)*size], b) // left-pad a short coordinate
	}
	return ecdsa.ParseUncompressedPublicKey(curve, point)
}

func b64Field(name, v string) ([]byte, error) {
	if v == "" {
		return nil, fmt.Errorf("%s missing", name)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return nil, fmt.Errorf("%s is not base64url", name)
	}
	return b, nil
}
