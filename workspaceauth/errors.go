package workspaceauth

import "errors"

var (
	// ErrUnavailable: the authorizer gave no usable answer (timeout, error, unexpected status).
	// Access is denied (fail closed) and nothing is cached.
	ErrUnavailable = errors.New("authorizer unavailable")
	// ErrNotFound: the workspace does not exist, as far as the authorizer can tell.
	ErrNotFound = errors.New("no such workspace")
)
