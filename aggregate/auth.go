package aggregate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// User is who calls the aggregated API; members see them through impersonation.
type User struct {
	Name   string
	Groups []string
}

// JWTKey verifies bearer JWTs of callers: the algorithm is pinned per key.
type JWTKey struct {
	ID        string // kid; empty matches any
	Algorithm string // RS256, ES256, HS256, ...
	Key       any    // *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey, or []byte for HS*
}

// Authenticator checks a caller's bearer token: a static token file (kube-apiserver's format:
// token,user,uid,"group1,group2"), or a JWT (sub = user, groups claim), verified with pinned keys.
type Authenticator struct {
	tokens   map[[32]byte]User // by sha256 of the token: compared without timing leaks
	keys     []JWTKey
	issuer   string
	audience string
	now      func() time.Time
}

// NewAuthenticator parses the token file (may be empty) and takes the JWT keys.
func NewAuthenticator(tokenFile []byte, keys []JWTKey, issuer, audience string) (*Authenticator, error) {
	a := &Authenticator{tokens: map[[32]byte]User{}, keys: keys, issuer: issuer, audience: audience, now: time.Now}
	r := csv.NewReader(bytes.NewReader(tokenFile))
	r.FieldsPerRecord, r.Comment = -1, '#'
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("token file line %d: want token,user,uid[,\"groups\"]", line)
		}
		u := User{Name: rec[1]}
		if len(rec) > 3 && rec[3] != "" {
			for g := range strings.SplitSeq(rec[3], ",") {
				u.Groups = append(u.Groups, strings.TrimSpace(g))
			}
		}
		a.tokens[sha256.Sum256([]byte(rec[0]))] = u
	}
	if len(a.tokens) == 0 && len(keys) == 0 {
		return nil, errors.New("no tokens and no keys: nobody could call")
	}
	return a, nil
}

// Authenticate reads the bearer token of r.
func (a *Authenticator) Authenticate(_ context.Context, r *http.Request) (User, error) {
	h := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || token == "" {
		return User{}, fmt.Errorf("%w: a bearer token is required", ErrUnauthenticated)
	}
	sum := sha256.Sum256([]byte(token))
	for k, u := range a.tokens {
		if subtle.ConstantTimeCompare(k[:], sum[:]) == 1 {
			return u, nil
		}
	}
	if len(a.keys) > 0 && strings.Count(token, ".") == 2 {
		return a.verifyJWT(token)
	}
	return User{}, fmt.Errorf("%w: unknown token", ErrUnauthenticated)
}

type callerClaims struct {
	Groups []string `json:"groups"`
	jwt.RegisteredClaims
}

func (a *Authenticator) verifyJWT(token string) (User, error) {
	var lastErr error
	for _, k := range a.keys {
		opts := []jwt.ParserOption{jwt.WithValidMethods([]string{k.Algorithm}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(a.now)}
		if a.issuer != "" {
			opts = append(opts, jwt.WithIssuer(a.issuer))
		}
		if a.audience != "" {
			opts = append(opts, jwt.WithAudience(a.audience))
		}
		var c callerClaims
		_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
			if kid, _ := t.Header["kid"].(string); k.ID != "" && kid != k.ID {
				return nil, errors.New("other key")
			}
			return k.Key, nil
		}, opts...)
		if err == nil && c.Subject != "" {
			return User{Name: c.Subject, Groups: c.Groups}, nil
		}
		lastErr = err
	}
	return User{}, fmt.Errorf("%w: %v", ErrUnauthenticated, lastErr)
}
