package discovery

import "errors"

// Registry sentinel errors. They belong in errors.go; they live here only because that file was
// closed to edits when the registry was added.
var (
	// ErrRegistryUnavailable is wrapped by every error caused by the shared store (Redis) not
	// answering; the request path maps it to 503 with Retry-After.
	ErrRegistryUnavailable = errors.New("discovery: agent registry unavailable")
	// ErrRegistryDraining is returned by Register and Wait after Drain.
	ErrRegistryDraining = errors.New("discovery: agent registry draining")
	// ErrBadRegistryOptions is wrapped by every NewMemoryRegistry / NewRedisRegistry validation error.
	ErrBadRegistryOptions = errors.New("discovery: bad registry options")
	// ErrInvalidID is wrapped when an agent, project or connection id cannot be valid.
	ErrInvalidID = errors.New("discovery: invalid agent, project or connection id")
)
