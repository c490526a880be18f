package workspaceauth

import (
	"strconv"
	"strings"
)

// Host is a parsed workspace host: <port>-<workspace>.<domain>.
type Host struct {
	Port      int
	Workspace string
	// Name is the host name, lower-cased, without the Host header's port: the cookie and the
	// transfer token are bound to exactly this.
	Name string
	// Authority is the Host header as sent, lower-cased, port kept: what URLs back to it use.
	Authority string
}

// ParseHost parses a Host header strictly (workspaces.md): exactly <port>-<name>.<domain>, with
// domain matched exactly (no trailing dot, no extra labels), port 1..65535 in decimal without
// leading zeros, name a DNS label. Case-insensitive; the header's :port is ignored for matching.
func ParseHost(header, domain string) (Host, bool) {
	authority, ok := asciiLower(header)
	if !ok {
		return Host{}, false
	}
	name, ok := stripPort(authority)
	if !ok || len(name) > 253 {
		return Host{}, false
	}
	domain, _ = asciiLower(domain)
	label, ok := strings.CutSuffix(name, "."+domain)
	if !ok || domain == "" {
		return Host{}, false
	}
	portText, workspace, ok := strings.Cut(label, "-")
	if !ok || !isPort(portText) || !IsLabel(workspace) {
		return Host{}, false
	}
	port, _ := strconv.Atoi(portText)
	return Host{Port: port, Workspace: workspace, Name: name, Authority: authority}, true
}

// stripPort removes a ":port" suffix (decimal, 1..5 digits); a bracketed IPv6 literal or any
// other colon is not a host name.
func stripPort(authority string) (string, bool) {
	i := strings.IndexByte(authority, ':')
	if i < 0 {
		return authority, authority != ""
	}
	port := authority[i+1:]
	if port == "" || len(port) > 5 || strings.IndexFunc(port, notDigit) >= 0 {
		return "", false
	}
	return authority[:i], i > 0
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

func isPort(s string) bool {
	if s == "" || len(s) > 5 || s[0] == '0' || strings.IndexFunc(s, notDigit) >= 0 {
		return false
	}
	p, err := strconv.Atoi(s)
	return err == nil && p >= 1 && p <= 65535
}

// IsLabel tells whether s is a DNS label as a workspace name must be: [a-z0-9-], 1 to 63
// characters, no leading or trailing '-'.
func IsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// asciiLower lower-cases ASCII letters; anything outside printable ASCII is no host name (and
// strings.ToLower would fold some of it, the Kelvin sign to 'k', into one).
func asciiLower(s string) (string, bool) {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c < '!' || c > '~':
			return "", false
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b), true
}
