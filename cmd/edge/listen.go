package main

import (
	"net"

	"golang.org/x/net/netutil"
)

// listen opens a TCP listener; with max > 0 it holds at most max connections open at once,
// making further clients wait in the kernel's accept queue instead of exhausting descriptors.
func listen(addr string, max int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || max <= 0 {
		return ln, err
	}
	return netutil.LimitListener(ln, max), nil
}
