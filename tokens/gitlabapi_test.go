package tokens

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestGitLabAPIVerify(t *testing.T) {
	secret := testHMACSecret()
	now := time.Unix(1_800_000_000, 0)
	mint := func(issuer, audience string, at time.Time, ttl time.Duration) string {
		tok, err := MintGitLabAPIToken(secret, issuer, audience, at, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// craft builds tokens MintGitLabAPIToken would not.
	craft := func(edit func(*MintAgentOptions)) string {
		o := MintAgentOptions{Key: secret, Algorithm: "HS256", Issuer: DefaultGitLabAPIIssuer, Audience: DefaultGitLabAPIAudience,
			IssuedAt: now, ExpiresAt: now.Add(time.Minute)}
		edit(&o)
		return mustMintAgent(t, o)
	}
	cases := []struct {
		name             string
		issuer, audience string // the verifier's
		token            string
		wantErr          error // nil: valid
	}{
		{"defaults", "", "", mint("", "", now, time.Minute), nil},
		{"explicit defaults", "gitlab", "gitlab-kas", mint("", "", now, time.Minute), nil},
		{"configured", "gitlab-test", "edge-api", mint("gitlab-test", "edge-api", now, time.Minute), nil},
		{"as GitLab mints it, nbf a bit earlier", "", "", craft(func(o *MintAgentOptions) {
			o.Extra = map[string]any{"nbf": now.Add(-5 * time.Second).Unix()}
		}), nil},
		{"expired within leeway", "", "", mint("", "", now.Add(-time.Minute-20*time.Second), time.Minute), nil},

		{"wrong issuer", "", "", mint("other", "", now, time.Minute), ErrIssuer},
		{"no issuer", "", "", craft(func(o *MintAgentOptions) { o.Issuer = "" }), ErrIssuer},
		{"wrong audience", "", "", mint("", "edge-agent", now, time.Minute), ErrAudience},
		{"default audience, configured other", "", "edge-api", mint("", "", now, time.Minute), ErrAudience},
		{"expired", "", "", mint("", "", now.Add(-2*time.Minute), time.Minute), ErrExpired},
		{"no exp", "", "", craft(func(o *MintAgentOptions) { o.ExpiresAt = time.Time{} }), ErrNoExpiry},
		{"issued in the future", "", "", mint("", "", now.Add(time.Minute), time.Minute), ErrNotYetValid},
		{"wrong secret", "", "", craft(func(o *MintAgentOptions) { o.Key = []byte(strings.Repeat("x", 32)) }), ErrSignature},
		{"HS384 with the secret", "", "", craft(func(o *MintAgentOptions) { o.Algorithm = "HS384" }), ErrAlgorithm},
		{"alg none, empty signature", "", "", noneJWT(t, map[string]any{"iss": DefaultGitLabAPIIssuer,
			"aud": DefaultGitLabAPIAudience, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}), ErrAlgorithm},
		{"empty", "", "", "", ErrInvalidJWT},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := NewGitLabAPIVerifier(secret, c.issuer, c.audience, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = v.Verify(c.token, now)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: got error %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidJWT) || !errors.Is(err, c.wantErr) {
				t.Fatalf("Verify: got %v, want error wrapping ErrInvalidJWT and %v", err, c.wantErr)
			}
		})
	}
}

func TestGitLabAPIErrors(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	if v, err := NewGitLabAPIVerifier([]byte("short"), "", "", 0); err == nil {
		t.Errorf("NewGitLabAPIVerifier with a short secret: got %p, want error", v)
	}
	if v, err := NewGitLabAPIVerifier(testHMACSecret(), "", "", -time.Second); err == nil {
		t.Errorf("NewGitLabAPIVerifier with a negative leeway: got %p, want error", v)
	}
	cases := []struct {
		name   string
		secret []byte
		ttl    time.Duration
	}{
		{"short secret", []byte("short"), time.Minute},
		{"zero TTL", testHMACSecret(), 0},
		{"negative TTL", testHMACSecret(), -time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if tok, err := MintGitLabAPIToken(c.secret, "", "", now, c.ttl); err == nil {
				t.Errorf("MintGitLabAPIToken: got a token of %d bytes, want error", len(tok))
			}
		})
	}
}

func BenchmarkGitLabAPIVerify(b *testing.B) {
	now := time.Now()
	tok, err := MintGitLabAPIToken(testHMACSecret(), "", "", now, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewGitLabAPIVerifier(testHMACSecret(), "", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGitLabAPIVerifiedTokenNotServedPastExp(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	v, err := NewGitLabAPIVerifier(secret, "", "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := MintGitLabAPIToken(secret, "", "", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(tok, now); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	if err := v.Verify(tok, now.Add(30*time.Second)); err != nil {
		t.Fatalf("cached token before exp: %v", err)
	}
	if err := v.Verify(tok, now.Add(2*time.Minute)); !errors.Is(err, ErrInvalidJWT) {
		t.Fatalf("after exp: got %v, want ErrInvalidJWT", err)
	}
}
