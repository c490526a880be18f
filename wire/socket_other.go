//go:build !unix

package wire

import "syscall"

// canPeek: without recv(MSG_PEEK) a socket is read like any stream, and no poll is parked.
const canPeek = false

func peekReadable(syscall.RawConn) error { return errNoPeek }

type quietProbe struct{}

func (*quietProbe) quiet(syscall.RawConn) bool { return false }
