package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lines joins YAML lines, so a case's line numbers can be read off its position in the list.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// parse parses src as edge.yaml in dir (a new temp dir when dir is "") and returns its problems.
func parse(t *testing.T, dir, src string) (*Config, Problems) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	c, err := Parse([]byte(src), "edge.yaml", dir)
	if err == nil {
		return c, nil
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse: got %v (%T), want Problems", err, err)
	}
	if c != nil {
		t.Errorf("Parse: got a config along with problems")
	}
	return nil, ps
}

func mustParse(t *testing.T, dir, src string) *Config {
	t.Helper()
	c, ps := parse(t, dir, src)
	if ps != nil {
		t.Fatalf("Parse: unexpected problems:\n%v", ps)
	}
	return c
}

func find(ps Problems, path string) (Problem, bool) {
	for _, p := range ps {
		if p.Path == path {
			return p, true
		}
	}
	return Problem{}, false
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newECKey(t *testing.T, curve elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func publicPEM(t *testing.T, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func privatePEM(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func selfSigned(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "edge.test"},
		DNSNames:              []string{"edge.test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// secret32 is a 40-byte test secret.
const secret32 = "0123456789abcdef0123456789abcdef01234567"
