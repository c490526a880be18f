package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
)

const minRSABits = 2048

// Key is one JWT verification key with its algorithm pinned: a token signed with any other
// algorithm is refused even if its kid names this key.
type Key struct {
	ID        string // kid
	Algorithm string // RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, HS256, HS384, HS512
	Public    any    // *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey, or []byte for HS*
}

// ParsePublicKeyPEM reads the first PEM block of pemData: a PKIX "PUBLIC KEY", a PKCS#1
// "RSA PUBLIC KEY" or a "CERTIFICATE" (only its key is used; its dates and chain are not
// checked, the key is pinned). The key type must match alg.
func ParsePublicKeyPEM(kid, alg string, pemData []byte) (Key, error) {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return Key{}, fmt.Errorf("%w: kid %q: no PEM block", ErrBadKey, kid)
	}
	var pub any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		if strings.Contains(block.Type, "PRIVATE") {
			return Key{}, fmt.Errorf("%w: kid %q: PEM holds a private key, give the public key", ErrBadKey, kid)
		}
		return Key{}, fmt.Errorf("%w: kid %q: unsupported PEM block %q", ErrBadKey, kid, block.Type)
	}
	if err != nil {
		return Key{}, fmt.Errorf("%w: kid %q: %w", ErrBadKey, kid, err)
	}
	k := Key{ID: kid, Algorithm: alg, Public: pub}
	if err := checkKey(k); err != nil {
		return Key{}, err
	}
	return k, nil
}

// checkKey refuses a key whose type does not fit its algorithm, so a token can never make the
// verifier use a key with another algorithm (e.g. an RSA public key as an HMAC secret).
func checkKey(k Key) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: kid %q, %s: %s", ErrBadKey, k.ID, k.Algorithm, fmt.Sprintf(format, args...))
	}
	switch k.Algorithm {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		pub, ok := k.Public.(*rsa.PublicKey)
		if !ok || pub == nil || pub.N == nil {
			return bad("want an RSA public key, have %T", k.Public)
		}
		if pub.N.BitLen() < minRSABits {
			return bad("RSA key of %d bits, want at least %d", pub.N.BitLen(), minRSABits)
		}
	case "ES256", "ES384", "ES512":
		pub, ok := k.Public.(*ecdsa.PublicKey)
		if !ok || pub == nil {
			return bad("want an ECDSA public key, have %T", k.Public)
		}
		want := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[k.Algorithm]
		if pub.Curve != want {
			return bad("want curve %s", want.Params().Name)
		}
	case "EdDSA":
		pub, ok := k.Public.(ed25519.PublicKey)
		if !ok || len(pub) != ed25519.PublicKeySize {
			return bad("want an Ed25519 public key, have %T", k.Public)
		}
	case "HS256", "HS384", "HS512":
		secret, ok := k.Public.([]byte)
		if !ok {
			return bad("want a []byte secret, have %T", k.Public)
		}
		// RFC 7518 §3.2: a key at least as long as the hash output.
		if minLen := map[string]int{"HS256": 32, "HS384": 48, "HS512": 64}[k.Algorithm]; len(secret) < minLen {
			return bad("secret of %d bytes, want at least %d", len(secret), minLen)
		}
	default:
		return fmt.Errorf("%w: kid %q: unsupported algorithm %q", ErrBadKey, k.ID, k.Algorithm)
	}
	return nil
}
