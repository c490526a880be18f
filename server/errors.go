package server

import "errors"

var (
	// ErrNoAgentKeys refuses every agent's connect: agents.keys is not configured.
	ErrNoAgentKeys = errors.New("agents.keys is not configured")
	// ErrOnDemandOff refuses a certificate at the first handshake of a name that is not one of
	// tls.acme.domains, when on-demand workspace certificates are off.
	ErrOnDemandOff = errors.New("on-demand certificates are off")
	// ErrTooManyNames refuses a certificate at a name's first handshake over the rate limit.
	ErrTooManyNames = errors.New("too many new names; try again later")
	// ErrReloadCrashed is a reload refused because it panicked: the running config stays.
	ErrReloadCrashed = errors.New("the reload crashed (a contained panic)")
)
