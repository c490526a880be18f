package tokens

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestInternalVerify(t *testing.T) {
	secret := testHMACSecret()
	now := time.Unix(1_800_000_000, 0)
	signer, err := NewInternalSigner(secret, 0)
	if err != nil {
		t.Fatal(err)
	}
	minted, err := signer.Mint("agent-1", now)
	if err != nil {
		t.Fatal(err)
	}
	// craft builds tokens the signer would never mint.
	craft := func(edit func(*MintAgentOptions)) string {
		o := MintAgentOptions{Key: secret, Algorithm: "HS256", Issuer: InternalIssuer, Audience: InternalAudience,
			AgentID: "agent-1", IssuedAt: now, ExpiresAt: now.Add(5 * time.Second)}
		edit(&o)
		return mustMintAgent(t, o)
	}
	s := newSigners(t)
	cases := []struct {
		name    string
		token   string
		agentID string
		at      time.Time
		wantErr error // nil: valid
	}{
		{"minted", minted, "agent-1", now, nil},
		{"minted, verified later within its TTL", minted, "agent-1", now.Add(4 * time.Second), nil},
		{"minted, expired within leeway", minted, "agent-1", now.Add(9 * time.Second), nil},
		{"crafted at the maximum lifetime", craft(func(o *MintAgentOptions) { o.ExpiresAt = now.Add(10 * time.Second) }), "agent-1", now, nil},

		{"wrong agent id", minted, "agent-2", now, ErrWrongAgent},
		{"empty agent id", minted, "", now, ErrWrongAgent},
		{"no agent_id", craft(func(o *MintAgentOptions) { o.AgentID = "" }), "agent-1", now, ErrWrongAgent},
		{"expired", minted, "agent-1", now.Add(11 * time.Second), ErrExpired},
		{"lifetime too long", craft(func(o *MintAgentOptions) { o.ExpiresAt = now.Add(11 * time.Second) }), "agent-1", now, ErrLifetime},
		{"no iat", craft(func(o *MintAgentOptions) { o.IssuedAt = time.Time{} }), "agent-1", now, ErrLifetime},
		{"no exp", craft(func(o *MintAgentOptions) { o.ExpiresAt = time.Time{} }), "agent-1", now, ErrNoExpiry},
		{"iat in the future", minted, "agent-1", now.Add(-6 * time.Second), ErrNotYetValid},
		{"wrong audience", craft(func(o *MintAgentOptions) { o.Audience = DefaultAgentAudience }), "agent-1", now, ErrAudience},
		{"wrong issuer", craft(func(o *MintAgentOptions) { o.Issuer = "gitlab" }), "agent-1", now, ErrIssuer},
		{"wrong secret", craft(func(o *MintAgentOptions) { o.Key = []byte(strings.Repeat("x", 32)) }), "agent-1", now, ErrSignature},
		{"HS512 with the secret", craft(func(o *MintAgentOptions) { o.Algorithm = "HS512" }), "agent-1", now, ErrAlgorithm},
		{"RS256 agent-style token", craft(func(o *MintAgentOptions) { o.Key, o.Algorithm = s.rsa, "RS256" }), "agent-1", now, ErrAlgorithm},
		{"alg none, empty signature", noneJWT(t, map[string]any{"iss": InternalIssuer, "aud": InternalAudience,
			"agent_id": "agent-1", "iat": now.Unix(), "exp": now.Add(5 * time.Second).Unix()}), "agent-1", now, ErrAlgorithm},
		{"not a JWT", "x", "agent-1", now, ErrInvalidJWT},
	}
	v, err := NewInternalVerifier(secret, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := v.Verify(c.token, c.agentID, c.at)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: got error %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidJWT) || !errors.Is(err, c.wantErr) {
				t.Fatalf("Verify: got %v, want error wrapping ErrInvalidJWT and %v", err, c.wantErr)
			}
			if strings.Contains(err.Error(), c.token) {
				t.Errorf("error contains the token")
			}
		})
	}
}

func TestInternalSignerCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	type step struct {
		agentID  string
		at       time.Time
		wantSame bool // the same token as the previous step
	}
	cases := []struct {
		name  string
		ttl   time.Duration
		steps []step
	}{
		{"reused while more than half the TTL remains", 5 * time.Second, []step{
			{"a", now, false}, {"a", now.Add(time.Second), true}, {"a", now.Add(2499 * time.Millisecond), true},
			{"a", now.Add(2500 * time.Millisecond), false}, {"a", now.Add(3 * time.Second), true}}},
		{"one per agent", 5 * time.Second, []step{
			{"a", now, false}, {"b", now, false}, {"a", now, false}}},
		{"clock gone back before iat", 5 * time.Second, []step{
			{"a", now, false}, {"a", now.Add(-time.Second), false}}},
		{"TTL rounded up to whole seconds", 1500 * time.Millisecond, []step{
			{"a", now, false}, {"a", now.Add(999 * time.Millisecond), true}, {"a", now.Add(time.Second), false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewInternalSigner(testHMACSecret(), c.ttl)
			if err != nil {
				t.Fatal(err)
			}
			prev := ""
			for i, st := range c.steps {
				tok, err := s.Mint(st.agentID, st.at)
				if err != nil {
					t.Fatalf("step %d: Mint: %v", i, err)
				}
				if same := tok == prev; same != st.wantSame {
					t.Errorf("step %d: same token: got %v, want %v", i, same, st.wantSame)
				}
				prev = tok
			}
		})
	}
}

func TestInternalSignerClaims(t *testing.T) {
	now := time.Unix(1_800_000_000, 300_000_000)
	cases := []struct {
		name    string
		ttl     time.Duration
		wantTTL int64
	}{
		{"default", 0, 5},
		{"rounded up", 1500 * time.Millisecond, 2},
		{"whole", 3 * time.Second, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewInternalSigner(testHMACSecret(), c.ttl)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := s.Mint("agent-1", now)
			if err != nil {
				t.Fatal(err)
			}
			claims := jwt.MapClaims{}
			parsed, _, err := jwt.NewParser().ParseUnverified(tok, claims)
			if err != nil {
				t.Fatal(err)
			}
			iat, _ := claims["iat"].(float64)
			exp, _ := claims["exp"].(float64)
			if got := int64(exp - iat); got != c.wantTTL {
				t.Errorf("exp-iat: got %d, want %d", got, c.wantTTL)
			}
			if got := int64(iat); got != now.Unix() {
				t.Errorf("iat: got %d, want %d", got, now.Unix())
			}
			for name, want := range map[string]any{"iss": InternalIssuer, "aud": InternalAudience, "agent_id": "agent-1"} {
				if got := claims[name]; got != want {
					t.Errorf("%s: got %v, want %v", name, got, want)
				}
			}
			if jti, _ := claims["jti"].(string); len(jti) < 20 {
				t.Errorf("jti: got %q, want a random string", jti)
			}
			if got := parsed.Method.Alg(); got != "HS256" {
				t.Errorf("alg: got %s, want HS256", got)
			}
		})
	}
}

func TestInternalSignerBounded(t *testing.T) {
	s, err := NewInternalSigner(testHMACSecret(), 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	for i := range internalCacheSize + 10 {
		if _, err := s.Mint(fmt.Sprintf("agent-%d", i), now); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.cache.Len(); got > internalCacheSize {
		t.Errorf("cache entries: got %d, want at most %d", got, internalCacheSize)
	}
}

func TestInternalSignerConcurrent(t *testing.T) {
	secret := testHMACSecret()
	s, err := NewInternalSigner(secret, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewInternalVerifier(secret, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				agentID := fmt.Sprintf("agent-%d", (g+i)%3)
				now := start.Add(time.Duration(i) * 100 * time.Millisecond)
				tok, err := s.Mint(agentID, now)
				if err == nil {
					err = v.Verify(tok, agentID, now)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInternalErrors(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, err := NewInternalSigner(testHMACSecret(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "a/b", strings.Repeat("a", 65)} {
		if _, err := s.Mint(id, now); !errors.Is(err, ErrBadClaim) {
			t.Errorf("Mint(%q): got %v, want ErrBadClaim", id, err)
		}
	}
	signers := []struct {
		name   string
		secret []byte
		ttl    time.Duration
	}{
		{"short secret", []byte("short"), 0},
		{"no secret", nil, 0},
		{"negative TTL", testHMACSecret(), -time.Second},
		{"TTL of minutes", testHMACSecret(), 5 * time.Minute},
	}
	for _, c := range signers {
		t.Run("signer "+c.name, func(t *testing.T) {
			if s, err := NewInternalSigner(c.secret, c.ttl); err == nil {
				t.Errorf("NewInternalSigner: got %p, want error", s)
			}
		})
	}
	verifiers := []struct {
		name                string
		secret              []byte
		maxLifetime, leeway time.Duration
	}{
		{"short secret", []byte("short"), 0, 0},
		{"negative lifetime", testHMACSecret(), -time.Second, 0},
		{"negative leeway", testHMACSecret(), 0, -time.Second},
	}
	for _, c := range verifiers {
		t.Run("verifier "+c.name, func(t *testing.T) {
			if v, err := NewInternalVerifier(c.secret, c.maxLifetime, c.leeway); err == nil {
				t.Errorf("NewInternalVerifier: got %p, want error", v)
			}
		})
	}
}

func BenchmarkInternalMint(b *testing.B) {
	s, err := NewInternalSigner(testHMACSecret(), 0)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Mint("agent-1", now); err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Mint("agent-1", now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Mint("agent-1", now); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.mint("agent-1", now); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkInternalVerify(b *testing.B) {
	s, err := NewInternalSigner(testHMACSecret(), 0)
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewInternalVerifier(testHMACSecret(), 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	tok, err := s.Mint("agent-1", now)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(tok, "agent-1", now); err != nil {
			b.Fatal(err)
		}
	}
}
