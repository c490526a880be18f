package discovery

import "errors"

var (
	// ErrBadCells is wrapped by every NewCells validation error.
	ErrBadCells = errors.New("discovery: bad cells")
	// ErrBadClassifierOptions is wrapped by every NewClassifier validation error.
	ErrBadClassifierOptions = errors.New("discovery: bad classifier options")
	// ErrClassify is wrapped by every Classify error (transport, timeout, status, malformed answer).
	ErrClassify = errors.New("discovery: classify")
	// ErrRegistryUnavailable is wrapped by every error caused by the shared store (Redis) not
	// answering; the request path maps it to 503 with Retry-After.
	ErrRegistryUnavailable = errors.New("discovery: agent registry unavailable")
	// ErrRegistryDraining is returned by Register and Wait after Drain.
	ErrRegistryDraining = errors.New("discovery: agent registry draining")
	// ErrBadRegistryOptions is wrapped by every NewMemoryRegistry / NewRedisRegistry validation error.
	ErrBadRegistryOptions = errors.New("discovery: bad registry options")
	// ErrBadHealthOptions is wrapped by every NewHealth validation error.
	ErrBadHealthOptions = errors.New("discovery: bad health options")
	// ErrInvalidID is wrapped when an agent, project or connection id cannot be valid.
	ErrInvalidID = errors.New("discovery: invalid agent, project or connection id")
)
