package tokens

import (
	"context"
	"strings"
	"testing"
	"time"
)

func BenchmarkParseRoutable(b *testing.B) {
	v := specVectors()[0].token
	cases := []struct{ name, token string }{
		{"valid", v},
		{"valid unknown prefix", mintRaw("acme-", "c:2\no:1\nu:16", 12)},
		{"invalid crc", v[:len(v)-1] + "z"},
		{"invalid payload", mintRaw("glrt-", "c:2\no:1!", 8)},
		{"legacy 20-char", "glrt-abcdefghij0123456789"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = ParseRoutable(c.token)
			}
		})
	}
}

func BenchmarkJobJWT(b *testing.B) {
	s := newSigners(b)
	jwt := mustMintJob(b, MintJobOptions{Key: s.rsa, Algorithm: "RS256", KID: "rsa", Audience: testAudience,
		Issuer: testIssuer, ExpiresAt: time.Now().Add(time.Hour), JobID: 42, Keys: Keys{Cell: 3, Organization: 1, Present: KeyCell | KeyOrganization}})
	cases := []struct{ name, token string }{
		{"jwt", "glcbt-" + jwt},
		{"opaque legacy", "glcbt-64_" + strings.Repeat("x", 20)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = JobJWT(c.token)
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	s := newSigners(b)
	exp := time.Now().Add(time.Hour)
	for _, alg := range []struct {
		name, kid string
		key       any
	}{{"RS256", "rsa", s.rsa}, {"ES256", "ec", s.ec}} {
		jwt := mustMintJob(b, MintJobOptions{Key: alg.key, Algorithm: alg.name, KID: alg.kid, Audience: testAudience,
			Issuer: testIssuer, ExpiresAt: exp, JobID: 42, Keys: Keys{Cell: 3, Organization: 1, Present: KeyCell | KeyOrganization}})
		for _, mode := range []struct {
			name  string
			cache int
		}{{"hit", 1000}, {"miss", 0}} {
			b.Run(alg.name+"/"+mode.name, func(b *testing.B) {
				v, err := NewVerifier(VerifierOptions{Keys: s.keys(), Issuer: testIssuer, Audience: testAudience, CacheSize: mode.cache})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if _, err := v.Verify(ctx, jwt); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.Verify(ctx, jwt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkParseJobClaimsUnverified(b *testing.B) {
	s := newSigners(b)
	jwt := mustMintJob(b, MintJobOptions{Key: s.ec, Algorithm: "ES256", KID: "ec", Audience: testAudience,
		Issuer: testIssuer, ExpiresAt: time.Now().Add(time.Hour), JobID: 42, Keys: Keys{Cell: 3, Organization: 1, Present: KeyCell | KeyOrganization}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseJobClaimsUnverified(jwt); err != nil {
			b.Fatal(err)
		}
	}
}
