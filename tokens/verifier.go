package tokens

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
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
	keys   map[string]Key
	single *Key // the only key, used for a token without kid
	algs   []string
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
	v := &Verifier{keys: make(map[string]Key, len(o.Keys)), now: o.Now}
	if v.now == nil {
		v.now = time.Now
	}
	var algs []string
	for _, k := range o.Keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
		if _, dup := v.keys[k.ID]; dup {
			return nil, fmt.Errorf("%w: duplicate kid %q", ErrBadKey, k.ID)
		}
		if k.ID == "" && len(o.Keys) > 1 {
			return nil, fmt.Errorf("%w: a key without kid is only allowed as the only key", ErrBadKey)
		}
		v.keys[k.ID] = k
		if !slices.Contains(algs, k.Algorithm) {
			algs = append(algs, k.Algorithm)
		}
	}
	if len(o.Keys) == 1 {
		v.single = &o.Keys[0]
	}
	opts := []jwt.ParserOption{
		// The union of the keys' algorithms; keyFor then pins each token to its key's one.
		jwt.WithValidMethods(algs),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(o.Audience),
		jwt.WithLeeway(o.Leeway),
		jwt.WithTimeFunc(v.now),
	}
	if o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(o.Issuer))
	}
	v.parser = jwt.NewParser(opts...)
	v.algs = algs
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
	if !looksLikeJWT(raw) {
		return JobClaims{}, fmt.Errorf("%w: not a JWT", ErrInvalidJWT)
	}
	var c jobClaimsJSON
	if t, err := v.parser.ParseWithClaims(raw, &c, v.keyFor); err != nil {
		algAllowed := t != nil && t.Method != nil && slices.Contains(v.algs, t.Method.Alg())
		return JobClaims{}, classify(err, &c, algAllowed)
	}
	return c.jobClaims(), nil
}

// keyFor picks the key named by the kid header and refuses any algorithm but the one pinned
// for that key (this is what stops HS256-signed-with-the-RSA-public-key and alg "none").
func (v *Verifier) keyFor(t *jwt.Token) (any, error) {
	var k Key
	var ok bool
	switch kid, has := t.Header["kid"]; {
	case has:
		if s, isString := kid.(string); isString {
			k, ok = v.keys[s]
		}
		// A lone key configured without kid accepts any kid.
		if !ok && v.single != nil && v.single.ID == "" {
			k, ok = *v.single, true
		}
	case v.single != nil:
		k, ok = *v.single, true
	}
	if !ok {
		return nil, ErrUnknownKey
	}
	if t.Method == nil || t.Method.Alg() != k.Algorithm {
		return nil, ErrAlgorithm
	}
	return k.Public, nil
}

// classify maps golang-jwt's errors to this package's sentinels.
// algAllowed tells a bad signature from an algorithm no key allows, which golang-jwt reports alike.
func classify(err error, c *jobClaimsJSON, algAllowed bool) error {
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
