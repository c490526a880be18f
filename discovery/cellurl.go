package discovery

import (
	"net/url"
	"strings"
)

// cellURL is a configured URL split once into the parts ByURL compares, so a lookup only slices
// the address and compares strings, without allocating.
type cellURL struct {
	scheme string
	host   string // without IPv6 brackets
	port   uint32 // default port filled in
	path   string // escaped, without a trailing slash
}

// parsedAddress is a classify answer split into the same parts; port 0 means none given.
type parsedAddress struct {
	scheme, host, path string
	port               uint32
}

func newCellURL(u *url.URL) cellURL {
	c := cellURL{scheme: u.Scheme, host: u.Hostname(), path: strings.TrimSuffix(u.EscapedPath(), "/")}
	if p, ok := parsePort(u.Port()); ok && p != 0 {
		c.port = p
	} else {
		c.port = defaultPort(u.Scheme)
	}
	return c
}

func (c cellURL) same(o cellURL) bool {
	return strings.EqualFold(c.scheme, o.scheme) && strings.EqualFold(c.host, o.host) &&
		c.port == o.port && c.path == o.path
}

// matches an address with a scheme: everything must agree.
func (c cellURL) matches(a parsedAddress) bool {
	port := a.port
	if port == 0 {
		port = defaultPort(a.scheme)
	}
	return strings.EqualFold(c.scheme, a.scheme) && strings.EqualFold(c.host, a.host) &&
		c.port == port && c.path == a.path
}

// matchesAuthority matches a bare "host[:port]" (the Topology Service stores cell addresses in
// that form): the host, and the port when one is given.
func (c cellURL) matchesAuthority(a parsedAddress) bool {
	return a.path == "" && strings.EqualFold(c.host, a.host) && (a.port == 0 || c.port == a.port)
}

// ByURL matches a classify answer's address against the configured URLs: scheme and host
// case-insensitive, default ports normalised, a trailing slash ignored. An address without a
// scheme ("host" or "host:port") matches only if exactly one cell has that host (and port).
// Addresses with user info, a query or a fragment match nothing.
func (c *Cells) ByURL(address string) (*Cell, bool) {
	a, ok := parseAddress(address)
	if !ok {
		return nil, false
	}
	if a.scheme != "" {
		for i := range c.urls {
			if c.urls[i].matches(a) {
				return c.urlCell[i], true
			}
		}
		return nil, false
	}
	var found *Cell
	for i := range c.urls {
		if c.urls[i].matchesAuthority(a) {
			if found != nil && found != c.urlCell[i] {
				return nil, false
			}
			found = c.urlCell[i]
		}
	}
	return found, found != nil
}

func parseAddress(s string) (parsedAddress, bool) {
	var a parsedAddress
	if i := strings.Index(s, "://"); i >= 0 {
		a.scheme, s = s[:i], s[i+3:]
		if a.scheme == "" {
			return a, false
		}
	}
	authority, path := s, ""
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		authority, path = s[:i], s[i:]
	}
	if strings.ContainsAny(path, "?#") || strings.Contains(authority, "@") {
		return a, false
	}
	a.path = strings.TrimSuffix(path, "/")
	host, port, ok := splitHostPort(authority)
	if !ok || host == "" {
		return a, false
	}
	a.host = host
	if a.port, ok = parsePort(port); !ok {
		return a, false
	}
	return a, true
}

// splitHostPort is net.SplitHostPort that also accepts a missing port and strips IPv6 brackets.
func splitHostPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", true
		}
		if rest[0] != ':' {
			return "", "", false
		}
		return host, rest[1:], true
	}
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return s, "", true
	}
	if strings.IndexByte(s[i+1:], ':') >= 0 {
		return "", "", false // bare IPv6 without brackets
	}
	return s[:i], s[i+1:], true
}

// parsePort parses a decimal port without allocating; "" is port 0 (none given).
func parsePort(s string) (uint32, bool) {
	var p uint32
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		p = p*10 + uint32(d)
		if p > 65535 {
			return 0, false
		}
	}
	return p, true
}

func defaultPort(scheme string) uint32 {
	switch {
	case strings.EqualFold(scheme, "https"):
		return 443
	case strings.EqualFold(scheme, "http"):
		return 80
	}
	return 0
}
