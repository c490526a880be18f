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
	method := jwt.GetSigningMethod(o.Algorithm)
	if method == nil || method == jwt.SigningMethodNone {
		return "", fmt.Errorf("%w: cannot sign with algorithm %q", ErrBadKey, o.Algorithm)
	}
	claims := jwt.MapClaims{"jti": rand.Text()}
	set := func(name string, v any, ok bool) {
		if ok {
			claims[name] = v
		}
	}
	set("iss", o.Issuer, o.Issuer != "")
	set("aud", o.Audience, o.Audience != "")
	set("sub", fmt.Sprintf("%s%d", jobSubjectPrefix, o.JobID), o.JobID != 0)
	set("iat", o.IssuedAt.Unix(), !o.IssuedAt.IsZero())
	set("exp", o.ExpiresAt.Unix(), !o.ExpiresAt.IsZero())
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
	t := jwt.NewWithClaims(method, claims)
	if o.KID != "" {
		t.Header["kid"] = o.KID
	}
	s, err := t.SignedString(o.Key)
	if err != nil {
		return "", fmt.Errorf("mint job JWT: %w", err)
	}
	return s, nil
}
