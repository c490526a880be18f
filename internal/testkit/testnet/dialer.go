// Package testnet helps tests reach servers on loopback by the host names a browser would use.
package testnet

import (
	"context"
	"net"
	"strings"
)

// LoopbackDialer dials 127.0.0.1 for any host that is localhost or ends in .localhost, keeping the
// port, as browsers do (RFC 6761); other hosts are dialed as given. Go's resolver does not resolve
// *.localhost names itself on every machine. Use it as an http.Transport's DialContext.
func LoopbackDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && IsLocalhost(host) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// IsLocalhost reports whether host is localhost or a name under it.
func IsLocalhost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
