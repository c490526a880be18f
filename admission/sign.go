package admission

import (
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// callTokenTTL is how long a signed call stays valid.
const callTokenTTL = 30 * time.Second

// HS256 signs each call to a controller with secret: iss "edge", aud the controller's name,
// valid 30 s, so a controller can tell edge's calls from anyone else's.
func HS256(secret []byte) (func(audience string) (string, error), error) {
	if len(secret) == 0 {
		return nil, errors.New("admission: empty secret")
	}
	return func(audience string) (string, error) {
		now := time.Now()
		claims := jwt.RegisteredClaims{
			Issuer:    "edge",
			Audience:  jwt.ClaimStrings{audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(callTokenTTL)),
		}
		return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	}, nil
}
