package wire

import "errors"

var (
	// errParked is the long-poll transport's answer to a request it sent and left waiting for its
	// answer off the handler (see Parking).
	errParked = errors.New("proxy: long poll parked")
	// errNoPeek: the system has no recv(MSG_PEEK) (socket_other.go).
	errNoPeek = errors.New("wire: no socket peek on this system")
)
