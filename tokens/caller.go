package tokens

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Caller is who a verified caller JWT says calls: sub and the groups claim.
type Caller struct {
	Subject string
	Groups  []string
}

// CallerVerifierOptions configures a CallerVerifier.
type CallerVerifierOptions struct {
	Keys     []Key            // public keys (RS*, PS*, ES*, EdDSA) and/or HMAC secrets (HS*, Public = []byte)
	Issuer   string           // required match when non-empty
	Audience string           // required match when non-empty
	Leeway   time.Duration    // clock skew allowed on exp, nbf and iat
	Now      func() time.Time // nil means time.Now
}

// CallerVerifier checks the bearer JWTs of callers of the Kubernetes aggregation API with the
// same code as every other JWT here. It is safe for concurrent use.
type CallerVerifier struct {
	check  jwtCheck
	parser *jwt.Parser
}

// NewCallerVerifier checks the options and builds a CallerVerifier.
func NewCallerVerifier(o CallerVerifierOptions) (*CallerVerifier, error) {
	if o.Leeway < 0 {
		return nil, errors.New("caller JWT verifier: negative leeway")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	check, err := newJWTCheck(o.Keys, o.Issuer, o.Audience, o.Leeway)
	if err != nil {
		return nil, fmt.Errorf("caller JWT verifier: %w", err)
	}
	return &CallerVerifier{check: check, parser: check.parser(o.Now)}, nil
}

// Verify checks a caller's JWT: signature with the key its kid names (or the only key when
// there is no kid) and that key's algorithm, exp required, nbf and iat honoured, iss and aud
// checked when configured, sub present. Failures wrap ErrInvalidJWT and, where one fits, a more
// specific sentinel (ErrBadClaim for a missing sub).
func (v *CallerVerifier) Verify(token string) (Caller, error) {
	var c callerClaims
	if err := v.check.parse(v.parser, token, &c, &c.RegisteredClaims); err != nil {
		return Caller{}, err
	}
	if c.Subject == "" {
		return Caller{}, fmt.Errorf("%w: %w: no sub", ErrInvalidJWT, ErrBadClaim)
	}
	return Caller{Subject: c.Subject, Groups: c.Groups}, nil
}

type callerClaims struct {
	jwt.RegisteredClaims
	Groups []string `json:"groups"`
}
