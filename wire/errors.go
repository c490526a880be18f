package wire

import "errors"

// errNoPeek: the system has no recv(MSG_PEEK) (socket_other.go).
var errNoPeek = errors.New("wire: no socket peek on this system")
