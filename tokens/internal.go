package tokens

import (
	"errors"
	"fmt"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Internal JWTs authenticate one edge instance to another's internal listener.
const (
	InternalIssuer             = "edge"
	InternalAudience           = "edge-internal"
	DefaultInternalTTL         = 5 * time.Second
	DefaultInternalMaxLifetime = 10 * time.Second
	DefaultInternalLeeway      = 5 * time.Second

	// maxInternalTTL refuses a configuration mistake (minutes where seconds were meant): these
	// tokens live a few seconds.
	maxInternalTTL = time.Minute
	// internalCacheSize bounds the signer's cache: agents forwarded to beyond it just mint more.
	internalCacheSize = 4096
)

// InternalSigner mints internal JWTs: HS256, iss "edge", aud "edge-internal", bound to an agent
// id, iat and exp a TTL apart, random jti. It is safe for concurrent use.
type InternalSigner struct {
	secret []byte
	ttl    time.Duration // whole seconds, as JWT times are
	// cache keeps the last token per agent id: minting is per forwarded request and a token is
	// reused while more than half its TTL remains.
	cache *lru.Cache[string, internalToken]
}

type internalToken struct {
	jwt      string
	iat, exp time.Time
}

// NewInternalSigner builds a signer with the secret shared among edges (at least 32 bytes) and
// the tokens' lifetime: 0 means DefaultInternalTTL, anything else is rounded up to whole
// seconds and at most a minute.
func NewInternalSigner(secret []byte, ttl time.Duration) (*InternalSigner, error) {
	switch {
	case ttl == 0:
		ttl = DefaultInternalTTL
	case ttl < 0 || ttl > maxInternalTTL:
		return nil, fmt.Errorf("internal JWT signer: TTL %v, want 0 (the default) to %v", ttl, maxInternalTTL)
	}
	key := Key{Algorithm: "HS256", Public: slices.Clone(secret)}
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("internal JWT signer: %w", err)
	}
	cache, err := lru.New[string, internalToken](internalCacheSize)
	if err != nil {
		return nil, fmt.Errorf("internal JWT signer cache: %w", err)
	}
	ttl = (ttl + time.Second - 1).Truncate(time.Second)
	return &InternalSigner{secret: key.Public.([]byte), ttl: ttl, cache: cache}, nil
}

// Mint returns an internal JWT for a request to agentID at now: a cached one while more than
// half its TTL remains, else a new one.
func (s *InternalSigner) Mint(agentID string, now time.Time) (string, error) {
	// Peek, not Get: it takes only the read lock, and live entries are re-added (so kept recent)
	// every half TTL anyway.
	if t, ok := s.cache.Peek(agentID); ok && !now.Before(t.iat) && t.exp.Sub(now) > s.ttl/2 {
		return t.jwt, nil
	}
	return s.mint(agentID, now)
}

// mint signs a new token and caches it.
func (s *InternalSigner) mint(agentID string, now time.Time) (string, error) {
	if !validID(agentID) {
		return "", fmt.Errorf("mint internal JWT: %w: agent id", ErrBadClaim)
	}
	iat := time.Unix(now.Unix(), 0)
	exp := iat.Add(s.ttl)
	claims := registeredClaims(InternalIssuer, InternalAudience, iat, exp)
	claims["agent_id"] = agentID
	token, err := signJWT("internal JWT", "HS256", s.secret, "", claims)
	if err != nil {
		return "", err
	}
	s.cache.Add(agentID, internalToken{jwt: token, iat: iat, exp: exp})
	return token, nil
}

// InternalVerifier checks internal JWTs on the internal listener. It is safe for concurrent use.
type InternalVerifier struct {
	check       jwtCheck
	maxLifetime time.Duration
}

// NewInternalVerifier builds a verifier with the secret shared among edges (at least 32 bytes),
// the longest exp-iat it accepts (0 means DefaultInternalMaxLifetime) and the clock skew allowed
// between edges (0 means DefaultInternalLeeway).
func NewInternalVerifier(secret []byte, maxLifetime, leeway time.Duration) (*InternalVerifier, error) {
	if maxLifetime < 0 || leeway < 0 {
		return nil, errors.New("internal JWT verifier: negative lifetime or leeway")
	}
	if maxLifetime == 0 {
		maxLifetime = DefaultInternalMaxLifetime
	}
	if leeway == 0 {
		leeway = DefaultInternalLeeway
	}
	check, err := hs256Check(secret, InternalIssuer, InternalAudience, leeway)
	if err != nil {
		return nil, fmt.Errorf("internal JWT verifier: %w", err)
	}
	return &InternalVerifier{check: check, maxLifetime: maxLifetime}, nil
}

// Verify checks an internal JWT at now for a request to agentID: HS256 with the shared secret,
// iss, aud, exp and iat both present, exp-iat within the maximum lifetime, agent_id equal to
// agentID. Failures wrap ErrInvalidJWT and, where one fits, a more specific sentinel
// (ErrLifetime, ErrWrongAgent, ErrNoExpiry, ErrExpired, ...).
func (v *InternalVerifier) Verify(token, agentID string, now time.Time) error {
	var c agentClaimsJSON
	if err := v.check.parseAt(token, now, &c, &c.RegisteredClaims); err != nil {
		return err
	}
	if c.IssuedAt == nil {
		return fmt.Errorf("%w: %w: no iat", ErrInvalidJWT, ErrLifetime)
	}
	if lifetime := c.ExpiresAt.Sub(c.IssuedAt.Time); lifetime > v.maxLifetime {
		return fmt.Errorf("%w: %w: %v, at most %v", ErrInvalidJWT, ErrLifetime, lifetime, v.maxLifetime)
	}
	if !c.AgentID.set || c.AgentID.v != agentID {
		return fmt.Errorf("%w: %w", ErrInvalidJWT, ErrWrongAgent)
	}
	return nil
}
