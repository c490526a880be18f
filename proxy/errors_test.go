package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
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
		{fmt.Errorf("%w: waited 20s", ErrAgentNotConnected), 504},
		{ErrHopLimit, 508},
		{ErrUnauthorized, 401},
		{context.Canceled, statusClientClosed},
		{context.DeadlineExceeded, 504},
		{timeout, 504},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, 502},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got, _ := statusOf(tt.err); got != tt.want {
				t.Errorf("statusOf(%v): got %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}
