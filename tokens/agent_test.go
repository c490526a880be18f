package tokens

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const agentIssuer = "https://gitlab.example.com"

func testHMACSecret() []byte { return []byte("0123456789abcdef0123456789abcdef") }

func agentKeys(s signers) []Key {
	return append(s.keys(), Key{ID: "hs", Algorithm: "HS256", Public: testHMACSecret()})
}

func mustMintAgent(tb testing.TB, o MintAgentOptions) string {
	tb.Helper()
	tok, err := MintAgentToken(o)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// noneJWT is an unsigned token: header.claims. with an empty signature.
func noneJWT(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	return strings.TrimSuffix(unsignedJWT(tb, map[string]any{"alg": "none", "typ": "JWT"}, claims), "c2ln")
}

func TestAgentVerify(t *testing.T) {
	s := newSigners(t)
	now := time.Unix(1_800_000_000, 0)
	exp := now.Add(time.Hour)
	base := func(alg, kid string, key any) MintAgentOptions {
		return MintAgentOptions{Key: key, Algorithm: alg, KID: kid, Issuer: agentIssuer, Audience: DefaultAgentAudience,
			AgentID: "agent-1", IssuedAt: now.Add(-time.Minute), ExpiresAt: exp}
	}
	rs := func(edit func(*MintAgentOptions)) string {
		o := base("RS256", "rsa", s.rsa)
		edit(&o)
		return mustMintAgent(t, o)
	}
	hs := func(edit func(*MintAgentOptions)) string {
		o := base("HS256", "hs", testHMACSecret())
		edit(&o)
		return mustMintAgent(t, o)
	}
	extra := func(claims map[string]any) func(*MintAgentOptions) {
		return func(o *MintAgentOptions) { o.Extra = claims }
	}
	noop := func(*MintAgentOptions) {}
	rsaPEM := publicPEM(t, &s.rsa.PublicKey)
	id := func(agent, project string) AgentIdentity {
		return AgentIdentity{AgentID: agent, ProjectID: project, ExpiresAt: exp}
	}

	cases := []struct {
		name    string
		token   string
		want    AgentIdentity
		wantErr error // nil: valid
	}{
		{"RS256", rs(noop), id("agent-1", ""), nil},
		{"ES256", mustMintAgent(t, base("ES256", "ec", s.ec)), id("agent-1", ""), nil},
		{"EdDSA", mustMintAgent(t, base("EdDSA", "ed", s.ed)), id("agent-1", ""), nil},
		{"HS256", hs(noop), id("agent-1", ""), nil},
		{"project_id string", hs(func(o *MintAgentOptions) { o.ProjectID = "gitlab-org.edge" }), id("agent-1", "gitlab-org.edge"), nil},
		{"agent_id and project_id numbers", hs(extra(map[string]any{"agent_id": 42, "project_id": 7})), id("42", "7"), nil},
		{"agent_id beyond 64 bits", hs(extra(map[string]any{"agent_id": json.RawMessage("123456789012345678901234567890")})),
			id("123456789012345678901234567890", ""), nil},
		{"agent_id negative zero", hs(extra(map[string]any{"agent_id": json.RawMessage("-0")})), id("0", ""), nil},
		{"agent_id all allowed characters", hs(extra(map[string]any{"agent_id": "AZaz09._-"})), id("AZaz09._-", ""), nil},
		{"agent_id of 64 characters", hs(extra(map[string]any{"agent_id": strings.Repeat("a", 64)})), id(strings.Repeat("a", 64), ""), nil},
		{"project_id null", hs(extra(map[string]any{"project_id": nil})), id("agent-1", ""), nil},
		{"aud array", rs(extra(map[string]any{"aud": []string{"other", DefaultAgentAudience}})), id("agent-1", ""), nil},
		{"expired within leeway", rs(func(o *MintAgentOptions) { o.ExpiresAt = now.Add(-20 * time.Second) }),
			AgentIdentity{AgentID: "agent-1", ExpiresAt: now.Add(-20 * time.Second)}, nil},

		{"agent_id missing", rs(func(o *MintAgentOptions) { o.AgentID = "" }), AgentIdentity{}, ErrBadClaim},
		{"agent_id null", rs(extra(map[string]any{"agent_id": nil})), AgentIdentity{}, ErrBadClaim},
		{"agent_id empty", rs(extra(map[string]any{"agent_id": ""})), AgentIdentity{}, ErrBadClaim},
		{"agent_id too long", rs(extra(map[string]any{"agent_id": strings.Repeat("a", 65)})), AgentIdentity{}, ErrBadClaim},
		{"agent_id with a slash", rs(extra(map[string]any{"agent_id": "a/b"})), AgentIdentity{}, ErrBadClaim},
		{"agent_id with a space", rs(extra(map[string]any{"agent_id": "a b"})), AgentIdentity{}, ErrBadClaim},
		{"agent_id with a newline", rs(extra(map[string]any{"agent_id": "a\nb"})), AgentIdentity{}, ErrBadClaim},
		{"agent_id non-ASCII", rs(extra(map[string]any{"agent_id": "agént"})), AgentIdentity{}, ErrBadClaim},
		{"agent_id fraction", rs(extra(map[string]any{"agent_id": 1.5})), AgentIdentity{}, ErrBadClaim},
		{"agent_id exponent", rs(extra(map[string]any{"agent_id": json.RawMessage("1e3")})), AgentIdentity{}, ErrBadClaim},
		{"agent_id number too long", rs(extra(map[string]any{"agent_id": json.RawMessage(strings.Repeat("9", 65))})), AgentIdentity{}, ErrBadClaim},
		{"agent_id bool", rs(extra(map[string]any{"agent_id": true})), AgentIdentity{}, ErrBadClaim},
		{"agent_id array", rs(extra(map[string]any{"agent_id": []string{"a"}})), AgentIdentity{}, ErrBadClaim},
		{"project_id bad", rs(extra(map[string]any{"project_id": "p/q"})), AgentIdentity{}, ErrBadClaim},
		{"expired", rs(func(o *MintAgentOptions) { o.ExpiresAt = now.Add(-time.Minute) }), AgentIdentity{}, ErrExpired},
		{"no exp", rs(func(o *MintAgentOptions) { o.ExpiresAt = time.Time{} }), AgentIdentity{}, ErrNoExpiry},
		{"nbf in the future", rs(extra(map[string]any{"nbf": now.Add(time.Minute).Unix()})), AgentIdentity{}, ErrNotYetValid},
		{"alg none, empty signature", noneJWT(t, map[string]any{"aud": DefaultAgentAudience, "iss": agentIssuer,
			"exp": exp.Unix(), "agent_id": "agent-1"}), AgentIdentity{}, ErrAlgorithm},
		{"HS256 with the RSA public key PEM as secret", mustMintAgent(t, base("HS256", "rsa", rsaPEM)), AgentIdentity{}, ErrAlgorithm},
		{"HS256 under the HMAC kid, RSA PEM as secret", mustMintAgent(t, base("HS256", "hs", rsaPEM)), AgentIdentity{}, ErrSignature},
		{"HS384 under the HMAC kid", mustMintAgent(t, base("HS384", "hs", []byte(strings.Repeat("k", 48)))), AgentIdentity{}, ErrAlgorithm},
		{"RS256 under the EC key's kid", rs(func(o *MintAgentOptions) { o.KID = "ec" }), AgentIdentity{}, ErrAlgorithm},
		{"wrong HMAC secret", mustMintAgent(t, base("HS256", "hs", []byte(strings.Repeat("x", 32)))), AgentIdentity{}, ErrSignature},
		{"wrong audience", rs(func(o *MintAgentOptions) { o.Audience = "edge-internal" }), AgentIdentity{}, ErrAudience},
		{"no audience", rs(func(o *MintAgentOptions) { o.Audience = "" }), AgentIdentity{}, ErrAudience},
		{"wrong issuer", rs(func(o *MintAgentOptions) { o.Issuer = "https://evil.example.com" }), AgentIdentity{}, ErrIssuer},
		{"no issuer", rs(func(o *MintAgentOptions) { o.Issuer = "" }), AgentIdentity{}, ErrIssuer},
		{"unknown kid", rs(func(o *MintAgentOptions) { o.KID = "nope" }), AgentIdentity{}, ErrUnknownKey},
		{"no kid with several keys", rs(func(o *MintAgentOptions) { o.KID = "" }), AgentIdentity{}, ErrUnknownKey},
		{"not a JWT", "glcbt-" + rs(noop), AgentIdentity{}, ErrInvalidJWT},
		{"empty", "", AgentIdentity{}, ErrInvalidJWT},
		{"too long", rs(noop) + strings.Repeat("A", maxJWTLen), AgentIdentity{}, ErrInvalidJWT},
	}
	v, err := NewAgentVerifier(AgentVerifierOptions{Keys: agentKeys(s), Issuer: agentIssuer, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), c.token)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: got error %v, want nil", err)
				}
				if !got.ExpiresAt.Equal(c.want.ExpiresAt) {
					t.Errorf("ExpiresAt: got %v, want %v", got.ExpiresAt, c.want.ExpiresAt)
				}
				got.ExpiresAt, c.want.ExpiresAt = time.Time{}, time.Time{}
				if got != c.want {
					t.Errorf("identity: got %+v, want %+v", got, c.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalidJWT) || !errors.Is(err, c.wantErr) {
				t.Fatalf("Verify: got %+v, %v, want error wrapping ErrInvalidJWT and %v", got, err, c.wantErr)
			}
			if got != (AgentIdentity{}) {
				t.Errorf("identity: got %+v with an error", got)
			}
			if len(c.token) > 0 && strings.Contains(err.Error(), c.token) {
				t.Errorf("error contains the token")
			}
		})
	}
}

func TestAgentVerifyOptions(t *testing.T) {
	s := newSigners(t)
	now := time.Unix(1_800_000_000, 0)
	mint := func(o MintAgentOptions) string {
		o.AgentID = "a"
		if o.Key == nil {
			o.Key, o.Algorithm = testHMACSecret(), "HS256"
		}
		if o.ExpiresAt.IsZero() {
			o.ExpiresAt = now.Add(time.Hour)
		}
		return mustMintAgent(t, o)
	}
	hsKey := Key{Algorithm: "HS256", Public: testHMACSecret()}
	cases := []struct {
		name    string
		o       AgentVerifierOptions
		token   string
		wantErr error
	}{
		{"issuer not configured, any issuer", AgentVerifierOptions{Keys: []Key{hsKey}},
			mint(MintAgentOptions{Issuer: "whoever", Audience: DefaultAgentAudience}), nil},
		{"issuer not configured, no issuer", AgentVerifierOptions{Keys: []Key{hsKey}},
			mint(MintAgentOptions{Audience: DefaultAgentAudience}), nil},
		{"lone key without kid, token without kid", AgentVerifierOptions{Keys: []Key{hsKey}},
			mint(MintAgentOptions{Audience: DefaultAgentAudience}), nil},
		{"lone key with kid, token without kid", AgentVerifierOptions{Keys: []Key{{ID: "k1", Algorithm: "HS256", Public: testHMACSecret()}}},
			mint(MintAgentOptions{Audience: DefaultAgentAudience}), nil},
		{"lone key with kid, other kid", AgentVerifierOptions{Keys: []Key{{ID: "k1", Algorithm: "HS256", Public: testHMACSecret()}}},
			mint(MintAgentOptions{Audience: DefaultAgentAudience, KID: "k2"}), ErrUnknownKey},
		{"configured audience", AgentVerifierOptions{Keys: []Key{hsKey}, Audience: "agents"},
			mint(MintAgentOptions{Audience: "agents"}), nil},
		{"configured audience, default in token", AgentVerifierOptions{Keys: []Key{hsKey}, Audience: "agents"},
			mint(MintAgentOptions{Audience: DefaultAgentAudience}), ErrAudience},
		{"default leeway is 30s", AgentVerifierOptions{Keys: []Key{hsKey}},
			mint(MintAgentOptions{Audience: DefaultAgentAudience, ExpiresAt: now.Add(-29 * time.Second)}), nil},
		{"default leeway is 30s, past it", AgentVerifierOptions{Keys: []Key{hsKey}},
			mint(MintAgentOptions{Audience: DefaultAgentAudience, ExpiresAt: now.Add(-31 * time.Second)}), ErrExpired},
		{"configured leeway", AgentVerifierOptions{Keys: []Key{hsKey}, Leeway: time.Second},
			mint(MintAgentOptions{Audience: DefaultAgentAudience, ExpiresAt: now.Add(-2 * time.Second)}), ErrExpired},
		{"public key from PEM", AgentVerifierOptions{Keys: []Key{mustPEMKey(t, "", "ES256", publicPEM(t, &s.ec.PublicKey))}},
			mint(MintAgentOptions{Key: s.ec, Algorithm: "ES256", Audience: DefaultAgentAudience}), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Now = func() time.Time { return now }
			v, err := NewAgentVerifier(c.o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.Verify(context.Background(), c.token)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify: got %v, want %v", err, c.wantErr)
			}
			if err == nil && got.AgentID != "a" {
				t.Errorf("AgentID: got %q, want %q", got.AgentID, "a")
			}
		})
	}
}

func mustPEMKey(tb testing.TB, kid, alg string, pemData []byte) Key {
	tb.Helper()
	k, err := ParsePublicKeyPEM(kid, alg, pemData)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func TestAgentVerifyCanceled(t *testing.T) {
	v, err := NewAgentVerifier(AgentVerifierOptions{Keys: []Key{{Algorithm: "HS256", Public: testHMACSecret()}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tok := mustMintAgent(t, MintAgentOptions{Key: testHMACSecret(), Algorithm: "HS256", Audience: DefaultAgentAudience,
		AgentID: "a", ExpiresAt: time.Now().Add(time.Hour)})
	if _, err := v.Verify(ctx, tok); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify: got %v, want context.Canceled", err)
	}
}

func TestNewAgentVerifierErrors(t *testing.T) {
	s := newSigners(t)
	cases := []struct {
		name string
		o    AgentVerifierOptions
	}{
		{"no keys", AgentVerifierOptions{}},
		{"negative leeway", AgentVerifierOptions{Keys: s.keys(), Leeway: -time.Second}},
		{"HS256 with a short secret", AgentVerifierOptions{Keys: []Key{{Algorithm: "HS256", Public: []byte("short")}}}},
		{"HS256 with an RSA key", AgentVerifierOptions{Keys: []Key{{Algorithm: "HS256", Public: &s.rsa.PublicKey}}}},
		{"RS256 with an HMAC secret", AgentVerifierOptions{Keys: []Key{{Algorithm: "RS256", Public: testHMACSecret()}}}},
		{"alg none", AgentVerifierOptions{Keys: []Key{{Algorithm: "none"}}}},
		{"duplicate kid", AgentVerifierOptions{Keys: append(agentKeys(s), Key{ID: "hs", Algorithm: "HS512", Public: []byte(strings.Repeat("k", 64))})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v, err := NewAgentVerifier(c.o); err == nil {
				t.Errorf("NewAgentVerifier: got %v, want error", v)
			}
		})
	}
}

func TestMintAgentTokenErrors(t *testing.T) {
	cases := []struct {
		name string
		o    MintAgentOptions
	}{
		{"alg none", MintAgentOptions{Algorithm: "none", AgentID: "a"}},
		{"unknown alg", MintAgentOptions{Algorithm: "XX1", AgentID: "a"}},
		{"key of the wrong type", MintAgentOptions{Algorithm: "RS256", Key: testHMACSecret(), AgentID: "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if tok, err := MintAgentToken(c.o); err == nil {
				t.Errorf("MintAgentToken: got a token of %d bytes, want error", len(tok))
			}
		})
	}
}

func BenchmarkAgentVerify(b *testing.B) {
	s := newSigners(b)
	exp := time.Now().Add(time.Hour)
	for _, alg := range []struct {
		name, kid string
		key       any
	}{{"HS256", "hs", testHMACSecret()}, {"ES256", "ec", s.ec}, {"RS256", "rsa", s.rsa}} {
		b.Run(alg.name, func(b *testing.B) {
			v, err := NewAgentVerifier(AgentVerifierOptions{Keys: agentKeys(s)})
			if err != nil {
				b.Fatal(err)
			}
			tok := mustMintAgent(b, MintAgentOptions{Key: alg.key, Algorithm: alg.name, KID: alg.kid,
				Audience: DefaultAgentAudience, AgentID: "agent-1", ProjectID: "42", ExpiresAt: exp})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
