package tokens

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
)

// The API for GitLab is called with an HS256 JWT signed with a secret shared with GitLab.
const (
	DefaultGitLabAPIIssuer   = "gitlab"
	DefaultGitLabAPIAudience = "gitlab-kas"
	DefaultGitLabAPILeeway   = 30 * time.Second
)

// GitLabAPIVerifier checks the JWTs GitLab calls the API for GitLab with. It is safe for
// concurrent use.
type GitLabAPIVerifier struct {
	check jwtCheck
	// verified remembers tokens already checked, until their exp: GitLab reuses a token for
	// many calls, and each proxied request would otherwise pay a signature check.
	verified *lru.Cache[[32]byte, time.Time]
}

const gitLabAPICacheSize = 1024

// NewGitLabAPIVerifier builds a verifier with the shared secret (at least 32 bytes). Empty
// issuer and audience mean DefaultGitLabAPIIssuer and DefaultGitLabAPIAudience; leeway 0 means
// DefaultGitLabAPILeeway.
func NewGitLabAPIVerifier(secret []byte, issuer, audience string, leeway time.Duration) (*GitLabAPIVerifier, error) {
	if leeway < 0 {
		return nil, errors.New("API for GitLab JWT verifier: negative leeway")
	}
	if leeway == 0 {
		leeway = DefaultGitLabAPILeeway
	}
	issuer, audience = gitLabAPIDefaults(issuer, audience)
	check, err := hs256Check(secret, issuer, audience, leeway)
	if err != nil {
		return nil, fmt.Errorf("API for GitLab JWT verifier: %w", err)
	}
	verified, err := lru.New[[32]byte, time.Time](gitLabAPICacheSize)
	if err != nil {
		return nil, err
	}
	return &GitLabAPIVerifier{check: check, verified: verified}, nil
}

// Verify checks a JWT at now: HS256 with the shared secret, iss and aud, exp required, nbf and
// iat honoured. Failures wrap ErrInvalidJWT and, where one fits, a more specific sentinel.
func (v *GitLabAPIVerifier) Verify(token string, now time.Time) error {
	key := tokenHash(token)
	if exp, ok := v.verified.Get(key); ok && now.Before(exp) {
		return nil
	}
	var c jwt.RegisteredClaims
	if err := v.check.parseAt(token, now, &c, &c); err != nil {
		return err
	}
	if c.ExpiresAt != nil {
		v.verified.Add(key, c.ExpiresAt.Time)
	}
	return nil
}

// MintGitLabAPIToken signs a JWT for the API for GitLab, as GitLab does (for tests and tools).
// Empty issuer and audience mean the defaults.
func MintGitLabAPIToken(secret []byte, issuer, audience string, now time.Time, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", errors.New("mint API for GitLab JWT: TTL must be positive")
	}
	if err := checkKey(Key{Algorithm: "HS256", Public: secret}); err != nil {
		return "", fmt.Errorf("mint API for GitLab JWT: %w", err)
	}
	issuer, audience = gitLabAPIDefaults(issuer, audience)
	claims := registeredClaims(issuer, audience, now, now.Add(ttl))
	return signJWT("API for GitLab JWT", "HS256", secret, "", claims)
}

func gitLabAPIDefaults(issuer, audience string) (string, string) {
	if issuer == "" {
		issuer = DefaultGitLabAPIIssuer
	}
	if audience == "" {
		audience = DefaultGitLabAPIAudience
	}
	return issuer, audience
}
