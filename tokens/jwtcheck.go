package tokens

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// jwtCheck is what every kind of JWT here is verified with: pinned keys, golang-jwt's claim
// checks (exp required, nbf and iat honoured when present, aud and iss when set, leeway) and the
// mapping of its errors to this package's sentinels.
type jwtCheck struct {
	keys keyRing
	opts []jwt.ParserOption // everything but the clock
}

func newJWTCheck(keys []Key, issuer, audience string, leeway time.Duration) (jwtCheck, error) {
	ring, err := newKeyRing(keys)
	if err != nil {
		return jwtCheck{}, err
	}
	opts := []jwt.ParserOption{
		// The union of the keys' algorithms; keyFor then pins each token to its key's one.
		jwt.WithValidMethods(ring.algs),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
	}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	if issuer != "" {
		opts = append(opts, jwt.WithIssuer(issuer))
	}
	return jwtCheck{keys: ring, opts: opts}, nil
}

// hs256Check is a jwtCheck with one HS256 shared secret (at least 32 bytes), without kid.
func hs256Check(secret []byte, issuer, audience string, leeway time.Duration) (jwtCheck, error) {
	return newJWTCheck([]Key{{Algorithm: "HS256", Public: slices.Clone(secret)}}, issuer, audience, leeway)
}

// parser returns a parser that reads the time from now. Parsers are safe for concurrent use.
func (c *jwtCheck) parser(now func() time.Time) *jwt.Parser {
	return jwt.NewParser(append(c.opts[:len(c.opts):len(c.opts)], jwt.WithTimeFunc(now))...)
}

// parseAt verifies raw at the time now, for callers that pass the time with each token.
func (c *jwtCheck) parseAt(raw string, now time.Time, claims jwt.Claims, reg *jwt.RegisteredClaims) error {
	return c.parse(c.parser(func() time.Time { return now }), raw, claims, reg)
}

// parse verifies raw with p (a parser from c) into claims, whose registered claims are reg.
// Failures wrap ErrInvalidJWT and, where one fits, a more specific sentinel.
func (c *jwtCheck) parse(p *jwt.Parser, raw string, claims jwt.Claims, reg *jwt.RegisteredClaims) error {
	if !looksLikeJWT(raw) {
		return fmt.Errorf("%w: not a JWT", ErrInvalidJWT)
	}
	if t, err := p.ParseWithClaims(raw, claims, c.keys.keyFor); err != nil {
		algAllowed := t != nil && t.Method != nil && slices.Contains(c.keys.algs, t.Method.Alg())
		return classify(err, reg, algAllowed)
	}
	return nil
}

// classify maps golang-jwt's errors to this package's sentinels.
// algAllowed tells a bad signature from an algorithm no key allows, which golang-jwt reports alike.
func classify(err error, c *jwt.RegisteredClaims, algAllowed bool) error {
	var specific error
	switch {
	case errors.Is(err, ErrUnknownKey):
		specific = ErrUnknownKey
	case errors.Is(err, ErrAlgorithm):
		specific = ErrAlgorithm
	case errors.Is(err, ErrBadClaim):
		specific = ErrBadClaim
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && algAllowed:
		specific = ErrSignature
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		// An alg outside every key's algorithm ("none" included), or one golang-jwt does not know.
		specific = ErrAlgorithm
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && c.ExpiresAt == nil:
		specific = ErrNoExpiry
	case errors.Is(err, jwt.ErrTokenExpired):
		specific = ErrExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		specific = ErrNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidAudience), errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && len(c.Audience) == 0:
		specific = ErrAudience
	case errors.Is(err, jwt.ErrTokenInvalidIssuer), errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && c.Issuer == "":
		specific = ErrIssuer
	default:
		return fmt.Errorf("%w: %w", ErrInvalidJWT, err)
	}
	return fmt.Errorf("%w: %w", ErrInvalidJWT, specific)
}
