package bench

import (
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestMintRoutableSpecVectors(t *testing.T) {
	var random [16]byte
	for i := range random {
		random[i] = byte(i)
	}
	tests := []struct {
		prefix string
		keys   map[string]int64
		want   string
	}{
		{"glrt-t2_", map[string]int64{"c": 2, "g": 1234, "o": 1, "u": 42}, "glrt-t2_AAECAwQFBgcICQoLDA0OD2M6MgpnOnlhCm86MQp1OjE2EQ.01.1a0uul4cy"},
		{"glpat-", map[string]int64{"c": 1, "o": 1, "u": 42}, "glpat-AAECAwQFBgcICQoLDA0OD2M6MQpvOjEKdToxNgw.01.130ncaeak"},
		{"glrt-t3_", map[string]int64{"c": 3, "o": 5, "p": 1000, "u": 7}, "glrt-t3_AAECAwQFBgcICQoLDA0OD2M6MwpvOjUKcDpycwp1OjcQ.01.180xv8zww"},
		// No prefix: all 27 characters are the b64, whose random part is not 00..0f.
		{"", map[string]int64{"o": 1}, "EL25d_AKXDUtqLnIQHEpkG86MQM.01.0r1ajj2i3"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			r := random
			if tt.prefix == "" {
				r = [16]byte{0x10, 0xbd, 0xb9, 0x77, 0xf0, 0x0a, 0x5c, 0x35, 0x2d, 0xa8, 0xb9, 0xc8, 0x40, 0x71, 0x29, 0x90}
			}
			got, err := MintRoutable(tt.prefix, r, tt.keys)
			if err != nil {
				t.Fatalf("MintRoutable: %v", err)
			}
			if got != tt.want {
				t.Errorf("token: got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMintRoutableTooLong(t *testing.T) {
	keys := map[string]int64{}
	for _, k := range []string{"c", "o", "g", "p", "u", "t", "a", "b", "d", "e", "f", "h", "i", "j"} {
		keys[k] = 1 << 62
	}
	if _, err := MintRoutable("glrt-", [16]byte{}, keys); err == nil {
		t.Errorf("oversized payload: got nil error")
	}
}

func TestMintJobJWT(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := MintJobJWT(key, JobJWT{Kid: "k1", Issuer: "https://gitlab.example.com", Audience: "gitlab-authz-token", Cell: 3, Organization: 1, JobID: 123, TTL: time.Hour}, now)
	if err != nil {
		t.Fatalf("MintJobJWT: %v", err)
	}
	raw, ok := strings.CutPrefix(tok, "glcbt-")
	if !ok {
		t.Fatalf("token has no glcbt- prefix")
	}
	claims := jwt.MapClaims{}
	parsed, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer("https://gitlab.example.com"),
		jwt.WithAudience("gitlab-authz-token"), jwt.WithExpirationRequired())
	if err != nil {
		t.Fatalf("parse minted jwt: %v", err)
	}
	if got := parsed.Header["kid"]; got != "k1" {
		t.Errorf("kid: got %v, want k1", got)
	}
	for k, want := range map[string]string{"c": "3", "o": "1", "sub": "gid://gitlab/Ci::Build/123"} {
		if got := claims[k]; got != want {
			t.Errorf("claim %s: got %v, want %v", k, got, want)
		}
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp.Unix() != now.Add(time.Hour).Unix() {
		t.Errorf("exp: got %v (%v), want %v", exp, err, now.Add(time.Hour).Unix())
	}
}

func TestKeyPEMRoundTrip(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := PublicKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(pub), "-----BEGIN PUBLIC KEY-----") {
		t.Errorf("public key PEM: got %q", pub[:30])
	}
	if _, err := ParseRSAPrivateKey([]byte("not pem")); err == nil {
		t.Errorf("bad PEM: got nil error")
	}
}
