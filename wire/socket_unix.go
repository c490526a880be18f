//go:build unix

package wire

import "syscall"

// canPeek: a socket's readiness is peeked at with recv(MSG_PEEK|MSG_DONTWAIT).
const canPeek = true

// peekReadable waits until the socket has a byte to read or has ended, reading nothing.
func peekReadable(raw syscall.RawConn) error {
	var buf [1]byte
	return raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
	})
}

// quietProbe says, without waiting, whether a socket is open with nothing to read. Its probe is
// bound once per connection: a closure made per request would be an allocation per request.
type quietProbe struct {
	probe func(fd uintptr) bool
	alive bool
	buf   [1]byte
}

func (q *quietProbe) check(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), q.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	q.alive = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
	return true
}

func (q *quietProbe) quiet(raw syscall.RawConn) bool {
	if q.probe == nil {
		q.probe = q.check
	}
	q.alive = false
	return raw.Read(q.probe) == nil && q.alive
}
