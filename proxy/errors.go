package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"

	"gitlab.com/edge/edge/tunnel"
)

var (
	ErrConflictingTokens = errors.New("tokens in this request name different cells")
	ErrBodyTooLarge      = errors.New("request body too large to look for a token")
	ErrBodyRead          = errors.New("reading the request body")
	ErrInvalidJobToken   = errors.New("job token failed verification")
	ErrUnauthorized      = errors.New("missing or invalid credentials")
	ErrHopLimit          = errors.New("hop limit exceeded")
	ErrBadRequest        = errors.New("bad request")
	ErrAgentNotConnected = errors.New("agent not connected")
	ErrRegistryDown      = errors.New("agent registry unavailable")
	ErrDraining          = errors.New("edge is shutting down")
	ErrTooManyStreams    = errors.New("too many requests in flight to the agent")
	errNotHere           = errors.New("holder answered not here")
)

// statusClientClosed is nginx's 499: the client went away before the answer.
const statusClientClosed = 499

// statusOf is the one place that maps an error to what the client sees, and the cause label
// that metrics and logs use.
func statusOf(err error) (status int, cause string) {
	var netErr net.Error
	switch {
	case errors.Is(err, ErrConflictingTokens):
		return http.StatusBadRequest, "conflicting_tokens"
	case errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge, "body_too_large"
	case errors.Is(err, ErrInvalidJobToken):
		return http.StatusUnauthorized, "invalid_job_token"
	case errors.Is(err, ErrBodyRead) && errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusRequestTimeout, "body_read_timeout"
	case errors.Is(err, ErrBodyRead):
		return http.StatusBadRequest, "body_read"
	case errors.Is(err, ErrRegistryDown):
		return http.StatusServiceUnavailable, "registry_unavailable"
	case errors.Is(err, ErrDraining), errors.Is(err, tunnel.ErrServerClosed):
		return http.StatusServiceUnavailable, "draining"
	case errors.Is(err, ErrTooManyStreams), errors.Is(err, tunnel.ErrTooManyStreams):
		return http.StatusServiceUnavailable, "too_many_streams"
	case errors.Is(err, ErrAgentNotConnected):
		return http.StatusGatewayTimeout, "agent_not_connected"
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, ErrHopLimit):
		return http.StatusLoopDetected, "hop_limit"
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, context.Canceled):
		return statusClientClosed, "client_closed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusGatewayTimeout, "timeout"
	default:
		return http.StatusBadGateway, "connect"
	}
}

// writeError answers with a small JSON body that names the problem but never echoes a token.
func writeError(w http.ResponseWriter, status int, cause, message string) {
	if status == statusClientClosed {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body := make([]byte, 0, 64+len(message))
	body = append(body, `{"error":`...)
	body = strconv.AppendQuote(body, cause)
	body = append(body, `,"message":`...)
	body = strconv.AppendQuote(body, message)
	body = append(body, "}\n"...)
	_, _ = w.Write(body)
}
