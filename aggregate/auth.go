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
)

// User is who calls the aggregated API; members see them through impersonation.
type User struct {
	Name   string
	Groups []string
}

// VerifyJWT checks a caller's bearer JWT and says who calls. cmd/edge gives one built on tokens'
// verification, the same code as every other JWT of edge.
type VerifyJWT func(token string) (User, error)

// Authenticator checks a caller's bearer token: a static token file (kube-apiserver's format:
// token,user,uid,"group1,group2"), or a JWT (sub = user, groups claim) checked by verifyJWT.
type Authenticator struct {
	tokens    map[[32]byte]User // by sha256 of the token: compared without timing leaks
	verifyJWT VerifyJWT
}

// NewAuthenticator parses the token file (may be empty) and takes the JWT verifier (nil: no JWT
// is accepted).
func NewAuthenticator(tokenFile []byte, verifyJWT VerifyJWT) (*Authenticator, error) {
	a := &Authenticator{tokens: map[[32]byte]User{}, verifyJWT: verifyJWT}
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
	if len(a.tokens) == 0 && verifyJWT == nil {
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
	if a.verifyJWT != nil && strings.Count(token, ".") == 2 {
		u, err := a.verifyJWT(token)
		if err != nil {
			return User{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
		return u, nil
	}
	return User{}, fmt.Errorf("%w: unknown token", ErrUnauthenticated)
}
