package tokens

import "errors"

// Sentinel errors. Failures wrap one or more of these; callers use errors.Is.
var (
	// ErrNotRoutable: the string is not a valid routable token (treat it as a legacy token).
	ErrNotRoutable = errors.New("not routable")

	// ErrInvalidJWT: a job token JWT failed parsing or verification. Every JWT failure wraps it.
	ErrInvalidJWT = errors.New("invalid job JWT")
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
	// ErrBadClaim: a routing claim (c, o, cell_id, ...) has a malformed value.
	ErrBadClaim = errors.New("malformed claim")

	// ErrBadKey: a verification or signing key is unusable (wrong type for its algorithm, too weak,
	// malformed PEM/JWK, unsupported algorithm).
	ErrBadKey = errors.New("bad key")
)
