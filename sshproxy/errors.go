package sshproxy

import "errors"

var (
	// ErrDenied: a wrong token, or a user without access. ErrNotFound: no such workspace. Any
	// other error from Authorize: no usable answer (denied too: fail closed).
	ErrDenied   = errors.New("access denied")
	ErrNotFound = errors.New("no such workspace")
)
