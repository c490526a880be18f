package hop

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

// StatusClientClosed is nginx's 499: the client went away before the answer.
const (
	StatusClientClosed = 499
	CauseClientClosed  = "client_closed"
	// CauseAnswerCut: the answer had begun when the cell or the client cut it; the connection closed.
	CauseAnswerCut = "answer_cut"
	CausePanic     = "panic"
)

// StatusOf is the one place that maps an error to what the client sees, and the cause label
// that metrics, logs and the error body use.
func StatusOf(err error) (status int, cause string) {
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
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, ErrNotConfigured):
		return http.StatusNotFound, "not_configured"
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed, "method_not_allowed"
	case errors.Is(err, ErrOrgMoving):
		return http.StatusServiceUnavailable, "organization_moving"
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
	case errors.Is(err, ErrPanicked):
		return http.StatusBadGateway, CausePanic
	case errors.Is(err, ErrAnswerCut):
		return http.StatusBadGateway, CauseAnswerCut
	case errors.Is(err, ErrPeerNotAllowed):
		return http.StatusBadGateway, "peer_not_allowed"
	case errors.Is(err, context.Canceled):
		return StatusClientClosed, CauseClientClosed
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

// CauseText is what a cause means, for the message of an error body.
func CauseText(cause string) string {
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

// CodeClass is a status's class as metrics label it: "2xx", ..., "other".
func CodeClass(status int) string {
	switch status / 100 {
	case 1:
		return "1xx"
	case 2:
		return "2xx"
	case 3:
		return "3xx"
	case 4:
		return "4xx"
	case 5:
		return "5xx"
	}
	return "other"
}
