package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"gitlab.com/edge/edge/tunnel"
)

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
	ErrNotFound          = errors.New("not found")
	ErrNotConfigured     = errors.New("not configured on this edge")
	ErrMethodNotAllowed  = errors.New("method not allowed")
	ErrRegistryDown      = errors.New("agent registry unavailable")
	ErrPeerNotAllowed    = errors.New("holder address is not inside internal.peers")
	ErrDraining          = errors.New("edge is shutting down")
	ErrDialRefused       = errors.New("no stream to the agent's upstream")
	errNotHere           = errors.New("holder answered not here")
	errNoSplice          = errors.New("holder does not splice for this agent")
	errSpliceExpired     = errors.New("spliced connection to the holder is past its age")
	errPanicked          = errors.New("edge failed serving this request (contained; see its log)")
	errAnswerCut         = errors.New("the cell's answer was cut short")
)

// statusClientClosed is nginx's 499: the client went away before the answer.
const (
	statusClientClosed = 499
	causeClientClosed  = "client_closed"
	// causeAnswerCut: the answer had begun when the cell or the client cut it; the connection closed.
	causeAnswerCut = "answer_cut"
	causePanic     = "panic"
)

// statusOf is the one place that maps an error to what the client sees, and the cause label
// that metrics, logs and the error body use.
func statusOf(err error) (status int, cause string) {
	var netErr net.Error
	switch {
	case errors.Is(err, ErrConflictingTokens):
		return http.StatusBadRequest, "conflicting_tokens"
	case errors.Is(err, ErrAmbiguousHeaders):
		return http.StatusBadRequest, "ambiguous_headers"
	case errors.Is(err, ErrBadPath):
		return http.StatusBadRequest, "bad_path"
	case errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge, "body_too_large"
	case errors.Is(err, ErrInvalidJobToken):
		return http.StatusUnauthorized, "invalid_job_token"
	case errors.Is(err, ErrBodyRead) && errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusRequestTimeout, "body_read_timeout"
	case errors.Is(err, ErrBodyRead):
		return http.StatusBadRequest, "body_read"
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, ErrNotConfigured):
		return http.StatusNotFound, "not_configured"
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed, "method_not_allowed"
	case errors.Is(err, ErrCellUnavailable):
		return http.StatusServiceUnavailable, "cell_unavailable"
	case errors.Is(err, ErrRegistryDown):
		return http.StatusServiceUnavailable, "registry_unavailable"
	case errors.Is(err, ErrDraining), errors.Is(err, tunnel.ErrServerClosed):
		return http.StatusServiceUnavailable, "draining"
	case errors.Is(err, tunnel.ErrTooManyStreams):
		return http.StatusServiceUnavailable, "too_many_streams"
	case errors.Is(err, tunnel.ErrAgentNotConnected):
		return http.StatusGatewayTimeout, "agent_not_connected"
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, ErrHopLimit):
		return http.StatusLoopDetected, "hop_limit"
	case errors.Is(err, errPanicked):
		return http.StatusBadGateway, causePanic
	case errors.Is(err, errAnswerCut):
		return http.StatusBadGateway, causeAnswerCut
	case errors.Is(err, ErrPeerNotAllowed):
		return http.StatusBadGateway, "peer_not_allowed"
	case errors.Is(err, context.Canceled):
		return statusClientClosed, causeClientClosed
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusGatewayTimeout, "timeout"
	}
	return http.StatusBadGateway, upstreamCause(err)
}

// upstreamCause names why a backend could not be reached or answered, for a 502's body and log.
func upstreamCause(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr),
		errors.As(err, &invalid), errors.As(err, &recordErr), errors.As(err, &alert):
		return "tls"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "upstream_closed"
	}
	return "upstream_error"
}

// causeText is what a cause means, for the message of an error body.
func causeText(cause string) string {
	switch cause {
	case "connection_refused":
		return "connection refused"
	case "connection_reset":
		return "connection reset"
	case "dns":
		return "name lookup failed"
	case "tls":
		return "TLS handshake failed"
	case "unreachable":
		return "network unreachable"
	case "upstream_closed":
		return "closed the connection before answering"
	case "timeout":
		return "no answer in time"
	}
	return "bad gateway"
}

// WriteError is edge's one error answer, on every listener and for every package: a small JSON
// body {"error": cause, "message": message} that names the problem and never echoes a token.
func WriteError(w http.ResponseWriter, status int, cause, message string) {
	if rec := recorderOf(w); rec != nil {
		rec.cause = cause
	}
	if status == statusClientClosed {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	body := make([]byte, 0, 64+len(message))
	body = append(body, `{"error":`...)
	body = appendJSONString(body, cause)
	body = append(body, `,"message":`...)
	body = appendJSONString(body, message)
	body = append(body, "}\n"...)
	_, _ = w.Write(body)
}

// writeErr answers err with its mapped status.
func writeErr(w http.ResponseWriter, err error) {
	status, cause := statusOf(err)
	WriteError(w, status, cause, err.Error())
}
