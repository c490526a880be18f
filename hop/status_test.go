package hop

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"gitlab.com/edge/edge/tunnel"
)

func TestStatusOf(t *testing.T) {
	timeout := &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: header names cell 2, body cell 3", ErrConflictingTokens), 400},
		{ErrBodyTooLarge, 413},
		{fmt.Errorf("%w: %w", ErrInvalidJobToken, errors.New("expired")), 401},
		{fmt.Errorf("%w: %w", ErrBodyRead, timeout), 408},
		{fmt.Errorf("%w: %w", ErrBodyRead, errors.New("unexpected EOF")), 400},
		{ErrRegistryDown, 503},
		{ErrDraining, 503},
		{tunnel.ErrTooManyStreams, 503},
		{fmt.Errorf("%w: waited 20s", tunnel.ErrAgentNotConnected), 504},
		{ErrHopLimit, 508},
		{ErrUnauthorized, 401},
		{context.Canceled, StatusClientClosed},
		{context.DeadlineExceeded, 504},
		{timeout, 504},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, 502},
		{ErrAmbiguousHeaders, 400},
		{ErrBadPath, 400},
		{fmt.Errorf("%w: agent id", ErrBadRequest), 400},
		{fmt.Errorf("%w: organization 7 is switched to cell 3", ErrConflict), 409},
		{ErrNotConfigured, 404},
		{ErrMethodNotAllowed, 405},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got, _ := StatusOf(tt.err); got != tt.want {
				t.Errorf("StatusOf(%v): got %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// A 502 names its real cause.
func TestUpstreamCause(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection_refused"},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "connection_reset"},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "cell.invalid"}}, "dns"},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "tls"},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, "tls"},
		{io.ErrUnexpectedEOF, "upstream_closed"},
		{fmt.Errorf("%w: 10.0.0.1:8081", ErrPeerNotAllowed), "peer_not_allowed"},
		{errors.New("something else"), "upstream_error"},
	}
	for _, tt := range tests {
		status, cause := StatusOf(tt.err)
		if status != 502 || cause != tt.want {
			t.Errorf("StatusOf(%v): got %d %s, want 502 %s", tt.err, status, cause, tt.want)
		}
	}
}

// The one error body is valid JSON whatever the message holds.
func TestWriteErrorBodyIsJSON(t *testing.T) {
	for _, msg := range []string{"plain", "quote \" and backslash \\", "control \x00\x1f\x7f", "bad utf-8 \xff\xfe", "ünïcødé"} {
		w := httptest.NewRecorder()
		Write(w, 400, "bad_request", msg)
		var e struct{ Error, Message string }
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error != "bad_request" {
			t.Errorf("body for %q is not the error JSON: %v %q", msg, err, w.Body.String())
		}
		if w.Header().Get("Content-Type") != "application/json" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("headers: %v", w.Header())
		}
	}
}
