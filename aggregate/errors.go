package aggregate

import "errors"

var (
	// ErrBadResourceVersion: a resourceVersion or continue token that edge did not make.
	ErrBadResourceVersion = errors.New("malformed resourceVersion")
	// ErrUnauthenticated: no or bad credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
	// errCrashed: edge's call of a member panicked (contained); the member counts as unavailable.
	errCrashed = errors.New("edge failed calling it (a contained panic)")
	// errJSONSpan: the JSON text is not what the span finders expect.
	errJSONSpan = errors.New("aggregate: unexpected JSON")
)
