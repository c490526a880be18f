package config

import "net/netip"

// DefaultPeers are the holder addresses an edge forwards to when internal.peers is not set:
// loopback and the private ranges (RFC 1918, IPv6 unique local).
func DefaultPeers() []string {
	return []string{"127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"}
}

// linkLocal is never a peer: cloud metadata endpoints (169.254.169.254) live there, and a holder
// address from a poisoned registry must not reach them.
func linkLocal() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fe80::/10")}
}

func (in *Internal) validatePeers(ch *checker) {
	const p = "internal.peers"
	peers := in.Peers
	if peers == nil {
		peers = DefaultPeers()
	} else if len(peers) == 0 {
		ch.add(p, "an empty list would refuse every holder; remove it for the defaults (loopback and private ranges)")
	}
	in.PeerPrefixes = make([]netip.Prefix, 0, len(peers))
	for i, s := range peers {
		pfx, ok := parsePrefix(s)
		if !ok {
			ch.add(index(p, i), "%q is not a CIDR (like 10.0.0.0/8) or an IP address", s)
			continue
		}
		pfx = unmapPrefix(pfx)
		if ll, bad := overlapsLinkLocal(pfx); bad {
			ch.add(index(p, i), "%q overlaps %s: link-local addresses are never peers (cloud metadata endpoints live there)", s, ll)
			continue
		}
		in.PeerPrefixes = append(in.PeerPrefixes, pfx)
	}
}

// unmapPrefix writes an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104) as the IPv4 one it covers,
// so the link-local check and address matching see one form.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4In6() || p.Bits() < 96 {
		return p
	}
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96).Masked()
}

func overlapsLinkLocal(p netip.Prefix) (netip.Prefix, bool) {
	for _, ll := range linkLocal() {
		if p.Overlaps(ll) {
			return ll, true
		}
	}
	// ::/0 .. ::/96 also cover the IPv4-mapped form of 169.254.0.0/16.
	if p.Addr().Is6() && p.Overlaps(netip.MustParsePrefix("::ffff:169.254.0.0/112")) {
		return linkLocal()[0], true
	}
	return netip.Prefix{}, false
}
