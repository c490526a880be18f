package agentrouter

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/wire"
)

// linkLocal are never peers, whatever internal.peers says: cloud metadata endpoints live there
// (and at AWS's IPv6 fd00:ec2::254, inside the default fc00::/7).
var linkLocal = [...]netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// peerAllowed tells whether edge may forward to addr (an "ip:port" after name resolution).
func peerAllowed(peers []netip.Prefix, addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, p := range linkLocal {
		if p.Contains(ip) {
			return false
		}
	}
	for _, p := range peers {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// newPeerTransport reaches other edges' internal listeners, and only addresses inside peers:
// the check runs on the address actually dialled, after name resolution, so neither a poisoned
// registry entry nor a DNS answer can send an internal JWT or a request anywhere else.
func newPeerTransport(peers []netip.Prefix, dialTimeout time.Duration, tlsConfig *tls.Config) *http.Transport {
	t := wire.NewTransport(newPeerDialer(peers, dialTimeout), dialTimeout, 0)
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig.Clone()
	}
	return t
}

// newPeerDialer dials only addresses inside peers, checked on the address actually dialled.
func newPeerDialer(peers []netip.Prefix, dialTimeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout:   dialTimeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			if !peerAllowed(peers, address) {
				return fmt.Errorf("%w: %s", hop.ErrPeerNotAllowed, address)
			}
			return nil
		},
	}
}
