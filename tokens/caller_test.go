package tokens

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestCallerVerify(t *testing.T) {
	s := newSigners(t)
	now := time.Unix(1_800_000_000, 0)
	keys := append(s.keys(), Key{ID: "hs", Algorithm: "HS256", Public: testHMACSecret()})
	v, err := NewCallerVerifier(CallerVerifierOptions{Keys: keys, Issuer: "https://idp.example", Audience: "edge-k8s", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := registeredClaims("https://idp.example", "edge-k8s", now.Add(-time.Minute), now.Add(time.Hour))
		c["sub"] = "alice"
		c["groups"] = []string{"dev", "ops"}
		if edit != nil {
			edit(c)
		}
		return c
	}
	sign := func(alg, kid string, key any, c jwt.MapClaims) string {
		tok, err := signJWT("caller JWT", alg, key, kid, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	alice := Caller{Subject: "alice", Groups: []string{"dev", "ops"}}
	tests := []struct {
		name  string
		token string
		want  Caller
		err   error
	}{
		{"RS256", sign("RS256", "rsa", s.rsa, claims(nil)), alice, nil},
		{"ES256", sign("ES256", "ec", s.ec, claims(nil)), alice, nil},
		{"HS256", sign("HS256", "hs", testHMACSecret(), claims(nil)), alice, nil},
		{"no groups", sign("RS256", "rsa", s.rsa, claims(func(c jwt.MapClaims) { delete(c, "groups") })), Caller{Subject: "alice"}, nil},
		{"no sub", sign("RS256", "rsa", s.rsa, claims(func(c jwt.MapClaims) { delete(c, "sub") })), Caller{}, ErrBadClaim},
		{"expired", sign("RS256", "rsa", s.rsa, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() })), Caller{}, ErrExpired},
		{"no exp", sign("RS256", "rsa", s.rsa, claims(func(c jwt.MapClaims) { delete(c, "exp") })), Caller{}, ErrNoExpiry},
		{"other audience", sign("RS256", "rsa", s.rsa, claims(func(c jwt.MapClaims) { c["aud"] = "other" })), Caller{}, ErrAudience},
		{"other issuer", sign("RS256", "rsa", s.rsa, claims(func(c jwt.MapClaims) { c["iss"] = "other" })), Caller{}, ErrIssuer},
		{"unknown kid", sign("RS256", "nope", s.rsa, claims(nil)), Caller{}, ErrUnknownKey},
		{"kid of another algorithm", sign("HS256", "rsa", testHMACSecret(), claims(nil)), Caller{}, ErrAlgorithm},
		{"alg none", noneJWT(t, claims(nil)), Caller{}, ErrAlgorithm},
		{"wrong key", sign("HS256", "hs", []byte("another secret of at least 32 bytes!"), claims(nil)), Caller{}, ErrSignature},
		{"not a JWT", "alice-token", Caller{}, ErrInvalidJWT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(tt.token)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if tt.err != nil && !errors.Is(err, ErrInvalidJWT) {
				t.Errorf("err %v does not wrap ErrInvalidJWT", err)
			}
			if got.Subject != tt.want.Subject || !slices.Equal(got.Groups, tt.want.Groups) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Without issuer and audience configured, neither claim is checked.
func TestCallerVerifyWithoutIssuerAndAudience(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	v, err := NewCallerVerifier(CallerVerifierOptions{Keys: []Key{{Algorithm: "HS256", Public: testHMACSecret()}}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	c := registeredClaims("anyone", "anything", time.Time{}, now.Add(time.Hour))
	c["sub"] = "bob"
	tok, err := signJWT("caller JWT", "HS256", testHMACSecret(), "", c)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Verify(tok); err != nil || got.Subject != "bob" {
		t.Errorf("got %+v, %v; want bob", got, err)
	}
}
