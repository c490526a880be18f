package registry

import "errors"

var (
	// ErrUnavailable is wrapped by every error caused by the shared store (Redis) not answering;
	// the request path maps it to 503 with Retry-After.
	ErrUnavailable = errors.New("registry: agent registry unavailable")
	// ErrDraining is returned by Register and Wait after Drain.
	ErrDraining = errors.New("registry: agent registry draining")
	// ErrBadOptions is wrapped by every NewMemory / NewRedis validation error.
	ErrBadOptions = errors.New("registry: bad registry options")
	// ErrInvalidID is wrapped when an agent, project or connection id cannot be valid.
	ErrInvalidID = errors.New("registry: invalid agent, project or connection id")
)
