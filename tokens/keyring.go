package tokens

import (
	"fmt"
	"slices"

	"github.com/golang-jwt/jwt/v5"
)

// keyRing is a set of verification keys, each with its algorithm pinned.
type keyRing struct {
	keys   map[string]Key
	single *Key     // the only key, used for a token without kid
	algs   []string // the union of the keys' algorithms
}

// newKeyRing checks every key (type fits algorithm, strong enough) and that kids are unique; a
// key without kid is only allowed as the only key.
func newKeyRing(keys []Key) (keyRing, error) {
	if len(keys) == 0 {
		return keyRing{}, fmt.Errorf("%w: no verification keys", ErrBadKey)
	}
	r := keyRing{keys: make(map[string]Key, len(keys))}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return keyRing{}, err
		}
		if _, dup := r.keys[k.ID]; dup {
			return keyRing{}, fmt.Errorf("%w: duplicate kid %q", ErrBadKey, k.ID)
		}
		if k.ID == "" && len(keys) > 1 {
			return keyRing{}, fmt.Errorf("%w: a key without kid is only allowed as the only key", ErrBadKey)
		}
		r.keys[k.ID] = k
		if !slices.Contains(r.algs, k.Algorithm) {
			r.algs = append(r.algs, k.Algorithm)
		}
	}
	if len(keys) == 1 {
		only := keys[0]
		r.single = &only
	}
	return r, nil
}

// keyFor picks the key named by the kid header and refuses any algorithm but the one pinned
// for that key (this is what stops HS256-signed-with-the-RSA-public-key and alg "none").
func (r *keyRing) keyFor(t *jwt.Token) (any, error) {
	var k Key
	var ok bool
	switch kid, has := t.Header["kid"]; {
	case has:
		if s, isString := kid.(string); isString {
			k, ok = r.keys[s]
		}
		// A lone key configured without kid accepts any kid.
		if !ok && r.single != nil && r.single.ID == "" {
			k, ok = *r.single, true
		}
	case r.single != nil:
		k, ok = *r.single, true
	}
	if !ok {
		return nil, ErrUnknownKey
	}
	if t.Method == nil || t.Method.Alg() != k.Algorithm {
		return nil, ErrAlgorithm
	}
	return k.Public, nil
}
