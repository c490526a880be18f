package tunnel

import (
	"errors"
	"fmt"
	"net/http"
)

var (
	// ErrAgentNotConnected: this edge holds no connection for the agent (the caller may look in the
	// registry or wait).
	ErrAgentNotConnected = errors.New("tunnel: agent not connected to this edge")
	// ErrConnectionGone: the connection named by id is closed or draining.
	ErrConnectionGone = errors.New("tunnel: connection gone")
	// ErrTooManyStreams: the agent already has ServerOptions.MaxStreamsPerAgent requests in flight
	// (the caller answers 503).
	ErrTooManyStreams = errors.New("tunnel: too many concurrent streams for agent")
	// ErrServerClosed: the Server is draining or closed and opens no new stream.
	ErrServerClosed = errors.New("tunnel: server closed")
	// ErrUnauthorized matches a StatusError for 401 or 403: the edge refused the agent's token.
	ErrUnauthorized = errors.New("tunnel: edge refused the agent token")
)

// StatusError is the agent's error when the edge answered the connect request with something
// other than 101 Switching Protocols.
type StatusError struct {
	StatusCode int
	Message    string // the edge's {"error": ...}, or the start of its body
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("tunnel: edge answered %d: %s", e.StatusCode, msg)
}

func (e *StatusError) Is(target error) bool {
	return target == ErrUnauthorized && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// errOpenStream marks a failure to open a stream: nothing of the request was sent.
var errOpenStream = errors.New("tunnel: open stream")
