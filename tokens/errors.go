package tokens

import "errors"

// Sentinel errors. Failures wrap one or more of these; callers use errors.Is.
var (
	// ErrNotRoutable: the string is not a valid routable token (treat it as a legacy token).
	ErrNotRoutable = errors.New("not routable")

	// ErrInvalidJWT: a JWT (job token, agent token, internal or API for GitLab) failed parsing or
	// verification. Every JWT failure wraps it. Its text predates the other kinds and is kept.
	ErrInvalidJWT = errors.New("invalid JWT")
	// ErrExpired: exp is in the past (beyond the leeway).
	ErrExpired = errors.New("token expired")
	// ErrNoExpiry: the JWT has no exp claim, which the verifier requires.
	ErrNoExpiry = errors.New("token has no exp claim")
	// ErrNotYetValid: nbf or iat is in the future (beyond the leeway).
	ErrNotYetValid = errors.New("token not valid yet")
	// ErrUnknownKey: no configured key matches the kid header (or no kid with several keys).
	ErrUnknownKey = errors.New("unknown signing key")
	// ErrAlgorithm: the alg header is not the algorithm pinned for the chosen key (includes "none").
	ErrAlgorithm = errors.New("algorithm not allowed for key")
	// ErrSignature: the signature does not verify.
	ErrSignature = errors.New("bad signature")
	// ErrAudience: aud does not contain the configured audience.
	ErrAudience = errors.New("wrong audience")
	// ErrIssuer: iss is not the configured issuer.
	ErrIssuer = errors.New("wrong issuer")
	// ErrBadClaim: a routing or identity claim (c, o, cell_id, agent_id, project_id, ...) is
	// malformed, or a required one is missing.
	ErrBadClaim = errors.New("malformed claim")
	// ErrLifetime: a short-lived token has no iat, or exp-iat exceeds the allowed lifetime.
	ErrLifetime = errors.New("token lifetime too long")
	// ErrWrongAgent: an internal JWT is bound to another agent than the request's.
	ErrWrongAgent = errors.New("token bound to another agent")

	// ErrBadKey: a verification or signing key is unusable (wrong type for its algorithm, too weak,
	// malformed PEM/JWK, unsupported algorithm).
	ErrBadKey = errors.New("bad key")
)
