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

// peekQuiet says, without waiting, whether the socket is open with nothing to read.
func peekQuiet(raw syscall.RawConn) bool {
	var buf [1]byte
	alive := false
	err := raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true
	})
	return err == nil && alive
}
