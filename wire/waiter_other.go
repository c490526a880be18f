//go:build !linux

package wire

import (
	"net"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// waiter is Linux's epoll; elsewhere parked polls wait on goroutines of their own.
type waiter struct{}

func newWaiter(*guard.Guard) *waiter { return nil }

func (w *waiter) add(net.Conn, time.Time, func()) (uint64, bool) { return 0, false }

func (w *waiter) remove(uint64) bool { return false }

func (w *waiter) close() {}
