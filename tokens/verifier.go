package tokens

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
)

// VerifierOptions configures a Verifier.
type VerifierOptions struct {
	Keys      []Key
	Issuer    string           // required match when non-empty
	Audience  string           // required; "aud" may be a string or an array containing it
	CacheSize int              // verified-token LRU size; 0 means no cache
	Leeway    time.Duration    // clock skew allowed on exp, nbf and iat
	Now       func() time.Time // nil means time.Now
}

// Verifier checks job token JWTs against pinned keys and caches the verified results.
// It is safe for concurrent use.
type Verifier struct {
	check  jwtCheck
	parser *jwt.Parser
	cache  *lru.Cache[[sha256.Size]byte, JobClaims]
	now    func() time.Time

	// onVerify, when set (tests only), is called on every full signature verification.
	onVerify func()
}

// NewVerifier checks the options and builds a Verifier.
func NewVerifier(o VerifierOptions) (*Verifier, error) {
	if len(o.Keys) == 0 {
		return nil, fmt.Errorf("%w: no verification keys", ErrBadKey)
	}
	if o.Audience == "" {
		return nil, errors.New("job JWT verifier: audience is required")
	}
	if o.Leeway < 0 || o.CacheSize < 0 {
		return nil, errors.New("job JWT verifier: negative leeway or cache size")
	}
	check, err := newJWTCheck(o.Keys, o.Issuer, o.Audience, o.Leeway)
	if err != nil {
		return nil, err
	}
	v := &Verifier{check: check, now: o.Now}
	if v.now == nil {
		v.now = time.Now
	}
	v.parser = check.parser(v.now)
	if o.CacheSize > 0 {
		cache, err := lru.New[[sha256.Size]byte, JobClaims](o.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("job JWT verifier cache: %w", err)
		}
		v.cache = cache
	}
	return v, nil
}

// Verify checks a bare JWT (without "glcbt-", see JobJWT): signature with the key its kid names
// (or the only key when there is no kid) and that key's algorithm, exp required, nbf and iat
// honoured, iss and aud checked. Failures wrap ErrInvalidJWT and, where one fits, a more specific
// sentinel (ErrExpired, ErrNoExpiry, ErrUnknownKey, ErrAlgorithm, ...); the one exception is a
// done ctx on a cache miss, which returns ctx.Err(). Verified results are cached by the SHA-256
// of the token (never the token) and never served at or after exp; failures are not cached.
func (v *Verifier) Verify(ctx context.Context, jwt string) (JobClaims, error) {
	if len(jwt) > maxJWTLen {
		return JobClaims{}, fmt.Errorf("%w: too long", ErrInvalidJWT)
	}
	now := v.now()
	var sum [sha256.Size]byte
	if v.cache != nil {
		sum = tokenHash(jwt)
		if c, ok := v.cache.Get(sum); ok {
			if now.Before(c.ExpiresAt) {
				return c, nil
			}
			v.cache.Remove(sum)
		}
	}
	if err := ctx.Err(); err != nil {
		return JobClaims{}, err
	}
	claims, err := v.verify(jwt)
	if err != nil {
		return JobClaims{}, err
	}
	if v.cache != nil && now.Before(claims.ExpiresAt) {
		v.cache.Add(sum, claims)
	}
	return claims, nil
}

func (v *Verifier) verify(raw string) (JobClaims, error) {
	if v.onVerify != nil {
		v.onVerify()
	}
	var c jobClaimsJSON
	if err := v.check.parse(v.parser, raw, &c, &c.RegisteredClaims); err != nil {
		return JobClaims{}, err
	}
	return c.jobClaims(), nil
}
