package workspaceauth

import "errors"

var (
	// ErrUnavailable: the authorizer gave no usable answer (timeout, error, unexpected status).
	// Access is denied (fail closed) and nothing is cached.
	ErrUnavailable = errors.New("authorizer unavailable")
	// ErrNotFound: the workspace does not exist, as far as the authorizer can tell.
	ErrNotFound = errors.New("no such workspace")
	// errNonce: the ID token is not the answer to this login.
	errNonce = errors.New("ID token nonce does not match the login's")
	// ErrSpent: a single-use value is not there (never issued, expired, or used already).
	ErrSpent = errors.New("no such value: expired or used already")
	// ErrBusy: the client, or all clients together, hold as many login values as the limits allow.
	ErrBusy = errors.New("too many logins in progress")
)
