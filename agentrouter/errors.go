package agentrouter

import "errors"

// How a holder refuses what another edge forwards; the entry edge acts on each (looks again,
// sends a request instead of a splice, dials anew) and never answers them to a client.
var (
	errNotHere           = errors.New("holder answered not here")
	errNoSplice          = errors.New("holder does not splice for this agent")
	errAgentCallTooLarge = errors.New("agentrouter: the answer through the tunnel is larger than 1 MiB")
	errNoAttempt         = errors.New("agentrouter: a request to an agent without its forwarding attempt")
	errSpliceExpired     = errors.New("spliced connection to the holder is past its age")
)
