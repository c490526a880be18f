package tokens

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	testIssuer   = "https://gitlab.example.com"
	testAudience = "gitlab-authz-token"
)

func TestVerify(t *testing.T) {
	s := newSigners(t)
	now := time.Unix(1_800_000_000, 0)
	keys := Keys{Cell: 3, Organization: 1, Present: KeyCell | KeyOrganization}
	base := func(alg, kid string, key any) MintJobOptions {
		return MintJobOptions{Key: key, Algorithm: alg, KID: kid, Issuer: testIssuer, Audience: testAudience,
			Keys: keys, JobID: 42, IssuedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour)}
	}
	rs := func(edit func(*MintJobOptions)) string {
		o := base("RS256", "rsa", s.rsa)
		edit(&o)
		return mustMintJob(t, o)
	}
	valid := JobClaims{Keys: keys, JobID: 42, ExpiresAt: now.Add(time.Hour)}
	noop := func(*MintJobOptions) {}
	rsaPEM := publicPEM(t, &s.rsa.PublicKey)
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"aud": testAudience, "exp": now.Add(time.Hour).Unix(), "c": "3"}).
		SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	good := rs(noop)
	withNumericKID := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"aud": testAudience, "exp": now.Add(time.Hour).Unix()})
	withNumericKID.Header["kid"] = 7
	numericKID, err := withNumericKID.SignedString(s.rsa)
	if err != nil {
		t.Fatal(err)
	}
	otherPayload := strings.Split(rs(func(o *MintJobOptions) { o.JobID = 43 }), ".")[1]
	goodParts := strings.Split(good, ".")
	swapped := goodParts[0] + "." + otherPayload + "." + goodParts[2]

	cases := []struct {
		name    string
		jwt     string
		want    JobClaims
		wantErr error // nil: valid
	}{
		{"RS256", good, valid, nil},
		{"ES256", mustMintJob(t, base("ES256", "ec", s.ec)), valid, nil},
		{"EdDSA", mustMintJob(t, base("EdDSA", "ed", s.ed)), valid, nil},
		{"older cell_id form", rs(func(o *MintJobOptions) { o.LegacyCellID = true }), valid, nil},
		{"c and cell_id disagree", rs(func(o *MintJobOptions) { o.Extra = map[string]any{"cell_id": 5} }),
			JobClaims{Keys: keys, JobID: 42, ExpiresAt: now.Add(time.Hour), CellConflict: true}, nil},
		{"aud array", rs(func(o *MintJobOptions) { o.Extra = map[string]any{"aud": []string{"other", testAudience}} }), valid, nil},
		{"expired within leeway", rs(func(o *MintJobOptions) { o.ExpiresAt = now.Add(-10 * time.Second) }),
			JobClaims{Keys: keys, JobID: 42, ExpiresAt: now.Add(-10 * time.Second)}, nil},
		{"iat within leeway", rs(func(o *MintJobOptions) { o.IssuedAt = now.Add(10 * time.Second) }), valid, nil},

		{"alg none", none, JobClaims{}, ErrInvalidJWT},
		{"alg none with a signature", none + "c2ln", JobClaims{}, ErrAlgorithm},
		{"HS256 with the RSA public key PEM as secret", mustMintJob(t, base("HS256", "rsa", rsaPEM)), JobClaims{}, ErrAlgorithm},
		{"RS256 under the EC key's kid", rs(func(o *MintJobOptions) { o.KID = "ec" }), JobClaims{}, ErrAlgorithm},
		{"unknown alg", unsignedJWT(t, map[string]any{"alg": "XX999", "kid": "rsa"}, map[string]any{}), JobClaims{}, ErrAlgorithm},
		{"signature of other claims", swapped, JobClaims{}, ErrSignature},
		{"expired", rs(func(o *MintJobOptions) { o.ExpiresAt = now.Add(-time.Minute) }), JobClaims{}, ErrExpired},
		{"no exp", rs(func(o *MintJobOptions) { o.ExpiresAt = time.Time{} }), JobClaims{}, ErrNoExpiry},
		{"nbf in the future", rs(func(o *MintJobOptions) { o.Extra = map[string]any{"nbf": now.Add(time.Minute).Unix()} }), JobClaims{}, ErrNotYetValid},
		{"iat in the future", rs(func(o *MintJobOptions) { o.IssuedAt = now.Add(time.Minute) }), JobClaims{}, ErrNotYetValid},
		{"wrong audience", rs(func(o *MintJobOptions) { o.Audience = "other" }), JobClaims{}, ErrAudience},
		{"aud array without ours", rs(func(o *MintJobOptions) { o.Extra = map[string]any{"aud": []string{"a", "b"}} }), JobClaims{}, ErrAudience},
		{"no audience", rs(func(o *MintJobOptions) { o.Audience = "" }), JobClaims{}, ErrAudience},
		{"wrong issuer", rs(func(o *MintJobOptions) { o.Issuer = "https://evil.example.com" }), JobClaims{}, ErrIssuer},
		{"no issuer", rs(func(o *MintJobOptions) { o.Issuer = "" }), JobClaims{}, ErrIssuer},
		{"unknown kid", rs(func(o *MintJobOptions) { o.KID = "nope" }), JobClaims{}, ErrUnknownKey},
		{"no kid with several keys", rs(func(o *MintJobOptions) { o.KID = "" }), JobClaims{}, ErrUnknownKey},
		{"kid not a string", numericKID, JobClaims{}, ErrUnknownKey},
		{"malformed c", rs(func(o *MintJobOptions) { o.Extra = map[string]any{"c": "C!"} }), JobClaims{}, ErrBadClaim},
		{"not a JWT", "glcbt-" + good, JobClaims{}, ErrInvalidJWT},
		{"empty", "", JobClaims{}, ErrInvalidJWT},
		{"too long", good + strings.Repeat("A", maxJWTLen), JobClaims{}, ErrInvalidJWT},
	}
	v, err := NewVerifier(VerifierOptions{Keys: s.keys(), Issuer: testIssuer, Audience: testAudience,
		Leeway: 30 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), c.jwt)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: got error %v, want nil", err)
				}
				if !got.ExpiresAt.Equal(c.want.ExpiresAt) {
					t.Errorf("ExpiresAt: got %v, want %v", got.ExpiresAt, c.want.ExpiresAt)
				}
				got.ExpiresAt, c.want.ExpiresAt = time.Time{}, time.Time{}
				if got != c.want {
					t.Errorf("claims: got %+v, want %+v", got, c.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalidJWT) || !errors.Is(err, c.wantErr) {
				t.Fatalf("Verify: got %+v, %v, want error wrapping ErrInvalidJWT and %v", got, err, c.wantErr)
			}
			if len(c.jwt) > 0 && strings.Contains(err.Error(), c.jwt) {
				t.Errorf("error contains the token")
			}
		})
	}
}

// TestVerifyKeyConfusionWithHMACKeyConfigured covers the case where HS256 is among the accepted
// algorithms, so only the per-key pinning stops an HS256 token naming the RSA key.
func TestVerifyKeyConfusionWithHMACKeyConfigured(t *testing.T) {
	s := newSigners(t)
	now := time.Unix(1_800_000_000, 0)
	rsaPEM := publicPEM(t, &s.rsa.PublicKey)
	keys := append(s.keys(), Key{ID: "hmac", Algorithm: "HS256", Public: []byte(strings.Repeat("k", 32))})
	v, err := NewVerifier(VerifierOptions{Keys: keys, Audience: testAudience, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		o       MintJobOptions
		wantErr error
	}{
		{"HS256 under the RSA kid", MintJobOptions{Key: rsaPEM, Algorithm: "HS256", KID: "rsa"}, ErrAlgorithm},
		{"HS256 under the HMAC kid, RSA PEM as secret", MintJobOptions{Key: rsaPEM, Algorithm: "HS256", KID: "hmac"}, ErrSignature},
		{"HS256 under the HMAC kid", MintJobOptions{Key: []byte(strings.Repeat("k", 32)), Algorithm: "HS256", KID: "hmac"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Audience, c.o.ExpiresAt = testAudience, now.Add(time.Hour)
			_, err := v.Verify(context.Background(), mustMintJob(t, c.o))
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Errorf("Verify: got %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestVerifySingleKey(t *testing.T) {
	s := newSigners(t)
	now := time.Unix(1_800_000_000, 0)
	cases := []struct {
		name    string
		keyID   string
		tokenID string
		wantErr error
	}{
		{"no kid picks the only key", "ec", "", nil},
		{"matching kid", "ec", "ec", nil},
		{"other kid", "ec", "other", ErrUnknownKey},
		{"key without kid takes any kid", "", "whatever", nil},
		{"key without kid, token without kid", "", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := NewVerifier(VerifierOptions{Keys: []Key{{ID: c.keyID, Algorithm: "ES256", Public: &s.ec.PublicKey}},
				Audience: testAudience, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			tok := mustMintJob(t, MintJobOptions{Key: s.ec, Algorithm: "ES256", KID: c.tokenID, Audience: testAudience, ExpiresAt: now.Add(time.Hour)})
			_, err = v.Verify(context.Background(), tok)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Errorf("Verify: got %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestVerifyCache(t *testing.T) {
	s := newSigners(t)
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	exp := clk.t.Add(time.Hour)
	newV := func(t *testing.T, size int, leeway time.Duration) (*Verifier, *int) {
		v, err := NewVerifier(VerifierOptions{Keys: s.keys(), Audience: testAudience, CacheSize: size, Leeway: leeway, Now: clk.now})
		if err != nil {
			t.Fatal(err)
		}
		n := new(int)
		v.onVerify = func() { *n++ }
		return v, n
	}
	good := mustMintJob(t, MintJobOptions{Key: s.ec, Algorithm: "ES256", KID: "ec", Audience: testAudience, ExpiresAt: exp,
		Keys: Keys{Cell: 2, Present: KeyCell}})
	bad := mustMintJob(t, MintJobOptions{Key: s.ec, Algorithm: "ES256", KID: "ec", Audience: "other", ExpiresAt: exp})

	type step struct {
		at      time.Time
		jwt     string
		wantErr error
		wantN   int // full verifications so far
	}
	cases := []struct {
		name   string
		size   int
		leeway time.Duration
		steps  []step
	}{
		{"hit does not re-verify", 10, 0, []step{
			{clk.t, good, nil, 1}, {clk.t, good, nil, 1}, {exp.Add(-time.Second), good, nil, 1}}},
		{"never served at or past exp", 10, 0, []step{
			{clk.t, good, nil, 1}, {exp, good, ErrExpired, 2}, {exp, good, ErrExpired, 3}}},
		{"within leeway re-verified, not cached", 10, time.Minute, []step{
			{clk.t, good, nil, 1}, {exp.Add(time.Second), good, nil, 2}, {exp.Add(2 * time.Second), good, nil, 3}}},
		{"failures not cached", 10, 0, []step{
			{clk.t, bad, ErrAudience, 1}, {clk.t, bad, ErrAudience, 2}}},
		{"no cache", 0, 0, []step{
			{clk.t, good, nil, 1}, {clk.t, good, nil, 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, n := newV(t, c.size, c.leeway)
			for i, st := range c.steps {
				clk.t = st.at
				got, err := v.Verify(context.Background(), st.jwt)
				if !errors.Is(err, st.wantErr) || (st.wantErr == nil) != (err == nil) {
					t.Errorf("step %d: Verify: got %v, want %v", i, err, st.wantErr)
				}
				if err == nil && got.Keys.Cell != 2 {
					t.Errorf("step %d: Cell: got %d, want 2", i, got.Keys.Cell)
				}
				if *n != st.wantN {
					t.Errorf("step %d: verifications: got %d, want %d", i, *n, st.wantN)
				}
			}
		})
	}
}

func TestVerifyCanceled(t *testing.T) {
	s := newSigners(t)
	v, err := NewVerifier(VerifierOptions{Keys: s.keys(), Audience: testAudience})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tok := mustMintJob(t, MintJobOptions{Key: s.ec, Algorithm: "ES256", KID: "ec", Audience: testAudience, ExpiresAt: time.Now().Add(time.Hour)})
	if _, err := v.Verify(ctx, tok); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify: got %v, want context.Canceled", err)
	}
}

func TestNewVerifierErrors(t *testing.T) {
	s := newSigners(t)
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ok := s.keys()
	cases := []struct {
		name string
		o    VerifierOptions
	}{
		{"no keys", VerifierOptions{Audience: testAudience}},
		{"no audience", VerifierOptions{Keys: ok}},
		{"negative leeway", VerifierOptions{Keys: ok, Audience: testAudience, Leeway: -time.Second}},
		{"negative cache size", VerifierOptions{Keys: ok, Audience: testAudience, CacheSize: -1}},
		{"duplicate kid", VerifierOptions{Keys: append(ok, ok[0]), Audience: testAudience}},
		{"key without kid among several", VerifierOptions{Keys: append(ok, Key{Algorithm: "RS256", Public: &s.rsa.PublicKey}), Audience: testAudience}},
		{"RS256 with an EC key", VerifierOptions{Keys: []Key{{ID: "k", Algorithm: "RS256", Public: &s.ec.PublicKey}}, Audience: testAudience}},
		{"ES384 with a P-256 key", VerifierOptions{Keys: []Key{{ID: "k", Algorithm: "ES384", Public: &s.ec.PublicKey}}, Audience: testAudience}},
		{"HS256 with an RSA key", VerifierOptions{Keys: []Key{{ID: "k", Algorithm: "HS256", Public: &s.rsa.PublicKey}}, Audience: testAudience}},
		{"HS256 with a short secret", VerifierOptions{Keys: []Key{{ID: "k", Algorithm: "HS256", Public: []byte("secret")}}, Audience: testAudience}},
		{"RSA 1024", VerifierOptions{Keys: []Key{{ID: "k", Algorithm: "RS256", Public: &weak.PublicKey}}, Audience: testAudience}},
		{"alg none", VerifierOptions{Keys: []Key{{ID: "k", Algorithm: "none", Public: nil}}, Audience: testAudience}},
		{"EdDSA with a private key", VerifierOptions{Keys: []Key{{ID: "k", Algorithm: "EdDSA", Public: s.ed}}, Audience: testAudience}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v, err := NewVerifier(c.o); err == nil {
				t.Errorf("NewVerifier: got %v, want error", v)
			}
		})
	}
}
