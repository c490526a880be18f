package aggregate

import "errors"

var (
	// ErrBadResourceVersion: a resourceVersion or continue token that edge did not make.
	ErrBadResourceVersion = errors.New("malformed resourceVersion")
	// ErrUnauthenticated: no or bad credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
)
