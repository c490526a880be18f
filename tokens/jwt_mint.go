package tokens

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MintJobOptions describes a job token JWT to mint (for tests, benchmarks and tools).
type MintJobOptions struct {
	Key              any // *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey, or []byte for HS*
	Algorithm        string
	KID              string // put in the header when non-empty
	Issuer, Audience string // omitted when empty
	Keys             Keys   // written as newer-form base36 strings "c","o","u","p","g"
	LegacyCellID     bool   // write cell_id/organization_id integers instead of c/o
	JobID            uint64 // sub = gid://gitlab/Ci::Build/<id>; omitted when 0
	IssuedAt         time.Time
	ExpiresAt        time.Time      // zero means no exp claim (for negative tests)
	Extra            map[string]any // extra claims, set last (may override the above; for negative tests)
}

// MintJobJWT signs a job token JWT and returns the bare JWT; callers prepend "glcbt-".
func MintJobJWT(o MintJobOptions) (string, error) {
	claims := registeredClaims(o.Issuer, o.Audience, o.IssuedAt, o.ExpiresAt)
	set := func(name string, v any, ok bool) {
		if ok {
			claims[name] = v
		}
	}
	set("sub", fmt.Sprintf("%s%d", jobSubjectPrefix, o.JobID), o.JobID != 0)
	for _, f := range []struct {
		name, legacy string
		bit          KeySet
	}{{"c", "cell_id", KeyCell}, {"o", "organization_id", KeyOrganization}, {"u", "", KeyUser}, {"p", "", KeyProject}, {"g", "", KeyGroup}} {
		v, ok := o.Keys.Get(f.bit)
		if o.LegacyCellID && f.legacy != "" {
			set(f.legacy, v, ok)
		} else {
			set(f.name, formatBase36(v), ok)
		}
	}
	for name, v := range o.Extra {
		claims[name] = v
	}
	return signJWT("job JWT", o.Algorithm, o.Key, o.KID, claims)
}

// registeredClaims starts a claim set to mint: a random jti, and iss, aud, iat and exp when set.
func registeredClaims(issuer, audience string, issuedAt, expiresAt time.Time) jwt.MapClaims {
	claims := jwt.MapClaims{"jti": rand.Text()}
	if issuer != "" {
		claims["iss"] = issuer
	}
	if audience != "" {
		claims["aud"] = audience
	}
	if !issuedAt.IsZero() {
		claims["iat"] = issuedAt.Unix()
	}
	if !expiresAt.IsZero() {
		claims["exp"] = expiresAt.Unix()
	}
	return claims
}

// signJWT signs claims with alg and key, with kid in the header when non-empty; what names the
// kind of token in errors.
func signJWT(what, alg string, key any, kid string, claims jwt.Claims) (string, error) {
	method := jwt.GetSigningMethod(alg)
	if method == nil || method == jwt.SigningMethodNone {
		return "", fmt.Errorf("%w: cannot sign with algorithm %q", ErrBadKey, alg)
	}
	t := jwt.NewWithClaims(method, claims)
	if kid != "" {
		t.Header["kid"] = kid
	}
	s, err := t.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("mint %s: %w", what, err)
	}
	return s, nil
}
