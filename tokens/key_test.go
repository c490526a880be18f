package tokens

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"
)

func TestParsePublicKeyPEM(t *testing.T) {
	s := newSigners(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jwt"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1, 0)} // expired on purpose: dates are not checked
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &s.ec.PublicKey, s.ec)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&s.rsa.PublicKey)})
	privDER, err := x509.MarshalPKCS8PrivateKey(s.ec)
	if err != nil {
		t.Fatal(err)
	}
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})

	cases := []struct {
		name string
		alg  string
		pem  []byte
		want any // public key compared with Equal; nil: want ErrBadKey
	}{
		{"RSA PKIX", "RS256", publicPEM(t, &s.rsa.PublicKey), &s.rsa.PublicKey},
		{"RSA PKIX for PS256", "PS256", publicPEM(t, &s.rsa.PublicKey), &s.rsa.PublicKey},
		{"RSA PKCS1", "RS512", pkcs1, &s.rsa.PublicKey},
		{"EC PKIX", "ES256", publicPEM(t, &s.ec.PublicKey), &s.ec.PublicKey},
		{"EC P-384", "ES384", publicPEM(t, &p384.PublicKey), &p384.PublicKey},
		{"Ed25519 PKIX", "EdDSA", publicPEM(t, s.ed.Public()), s.ed.Public()},
		{"certificate", "ES256", certPEM, &s.ec.PublicKey},
		{"RSA key for ES256", "ES256", publicPEM(t, &s.rsa.PublicKey), nil},
		{"EC key for RS256", "RS256", publicPEM(t, &s.ec.PublicKey), nil},
		{"P-384 key for ES256", "ES256", publicPEM(t, &p384.PublicKey), nil},
		{"RSA key for HS256", "HS256", publicPEM(t, &s.rsa.PublicKey), nil},
		{"unknown alg", "XS256", publicPEM(t, &s.rsa.PublicKey), nil},
		{"private key", "ES256", privPEM, nil},
		{"not PEM", "RS256", []byte("hello"), nil},
		{"empty", "RS256", nil, nil},
		{"broken DER", "RS256", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := ParsePublicKeyPEM("kid1", c.alg, c.pem)
			if c.want == nil {
				if !errors.Is(err, ErrBadKey) {
					t.Errorf("ParsePublicKeyPEM: got %+v, %v, want ErrBadKey", k, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePublicKeyPEM: got error %v, want nil", err)
			}
			if k.ID != "kid1" || k.Algorithm != c.alg {
				t.Errorf("kid, alg: got %q %q, want %q %q", k.ID, k.Algorithm, "kid1", c.alg)
			}
			if eq, ok := k.Public.(interface{ Equal(x crypto.PublicKey) bool }); !ok || !eq.Equal(c.want) {
				t.Errorf("public key: got %T, want %T equal to the original", k.Public, c.want)
			}
		})
	}
}
