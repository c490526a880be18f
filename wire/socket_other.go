//go:build !unix

package wire

import (
	"errors"
	"syscall"
)

// canPeek: without recv(MSG_PEEK) a socket is read like any stream, and no poll is parked.
const canPeek = false

var errNoPeek = errors.New("wire: no socket peek on this system")

func peekReadable(syscall.RawConn) error { return errNoPeek }

func peekQuiet(syscall.RawConn) bool { return false }
