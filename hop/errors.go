package hop

import "errors"

// The errors edge answers itself; StatusOf maps each to what the client sees.
var (
	ErrConflictingTokens = errors.New("tokens in this request name different cells")
	ErrAmbiguousHeaders  = errors.New("ambiguous credentials")
	ErrBadPath           = errors.New("path refused")
	ErrBodyTooLarge      = errors.New("request body too large to look for a token")
	ErrBodyRead          = errors.New("reading the request body")
	ErrInvalidJobToken   = errors.New("job token failed verification")
	ErrUnauthorized      = errors.New("missing or invalid credentials")
	ErrHopLimit          = errors.New("hop limit exceeded")
	ErrBadRequest        = errors.New("bad request")
	ErrConflict          = errors.New("conflicts with the state in force")
	ErrOrgMoving         = errors.New("the organization is moving to another cell")
	ErrNotFound          = errors.New("not found")
	ErrNotConfigured     = errors.New("not configured on this edge")
	ErrMethodNotAllowed  = errors.New("method not allowed")
	ErrRegistryDown      = errors.New("agent registry unavailable")
	ErrPeerNotAllowed    = errors.New("holder address is not inside internal.peers")
	ErrDraining          = errors.New("edge is shutting down")
	ErrDialRefused       = errors.New("no stream to the agent's upstream")
	ErrPanicked          = errors.New("edge failed serving this request (contained; see its log)")
	ErrCellUnavailable   = errors.New("no healthy address")
	ErrAnswerCut         = errors.New("the cell's answer was cut short")
)
