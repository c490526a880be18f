package front

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tunnel"
)

// HeaderPolicy is the one place that decides which request headers edge lets through. It runs on
// every listener before anything reads a header.
//
// Backends do not all see header names as Go does: Rack, CGI and nginx turn '-' into '_' and
// upper-case the name, so Edge_Cell, EDGE-CELL and Edge-Cell reach them as one variable. Every
// rule here therefore compares names case-insensitively with '_' taken for '-'.
type HeaderPolicy struct {
	// Trusted are the peers whose forwarding headers (Forwarded, X-Forwarded-*, X-Real-IP) and
	// X-Request-Id are kept; from anyone else they are removed and edge sets its own.
	Trusted []netip.Prefix
	// TrustAll keeps forwarding headers from every peer (the internal listener, whose peers are
	// other edges).
	TrustAll bool
	// KeepEdge keeps edge's own Edge-* headers (the internal listener: they are its routing
	// instructions, and an internal JWT authenticates them).
	KeepEdge bool
}

// Upgrade is which protocol switch a route allows.
type Upgrade uint8

const (
	UpgradeNone      Upgrade = iota
	UpgradeWebSocket         // WebSocket only (RFC 6455)
	UpgradeTunnel            // the agent tunnel's own protocol
	UpgradeInternal          // WebSocket, a raw TCP stream to an agent's upstream (SSH), or a splice
)

// trusted tells whether the request comes from a peer whose forwarding headers are kept.
func (hp *HeaderPolicy) trusted(remoteAddr string) bool {
	if hp.TrustAll {
		return true
	}
	if len(hp.Trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range hp.Trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// clean removes what no client may send: edge's own headers in every spelling (but an agent's
// Edge-Agent-Info on its connect request, which the tunnel server reads), an untrusted
// peer's forwarding headers and request id, and the h2c upgrade's settings. It refuses a token
// header sent twice (in any spelling) or two token headers of the same kind that disagree: a
// backend would pick one of them, and edge cannot know which.
func (hp *HeaderPolicy) clean(r *http.Request, trusted bool) error {
	h := r.Header
	var tokenValues [3]string
	var tokenSeen [3]bool
	for name, values := range h {
		switch {
		case !hp.KeepEdge && hop.FoldPrefix(name, "edge-"):
			if name == tunnel.InfoHeader && r.URL != nil && r.URL.Path == tunnel.ConnectPath {
				continue // what an agent says about itself, for the tunnel server (which checks it)
			}
			delete(h, name)
		case !trusted && isForwardingHeader(name):
			delete(h, name)
		case hop.FoldEqual(name, "http2-settings"):
			delete(h, name)
		default:
			i := tokenHeaderIndex(name)
			if i < 0 {
				continue
			}
			if tokenSeen[i] || len(values) != 1 || name != tokenHeaders[i] {
				return fmt.Errorf("%w: the %s header must be sent once, spelled %s", hop.ErrAmbiguousHeaders, tokenHeaders[i], tokenHeaders[i])
			}
			tokenSeen[i], tokenValues[i] = true, strings.TrimSpace(values[0])
		}
	}
	if v := h["Authorization"]; len(v) > 1 {
		return fmt.Errorf("%w: the Authorization header must be sent once", hop.ErrAmbiguousHeaders)
	}
	return sameKindAgree(tokenValues, tokenSeen, h)
}

// tokenHeaders are the headers a runner or API client authenticates with, canonical spelling.
var (
	tokenHeaders      = [3]string{"Runner-Token", "Job-Token", "Private-Token"}
	tokenHeadersLower = [3]string{"runner-token", "job-token", "private-token"}
)

func tokenHeaderIndex(name string) int {
	if len(name) < 9 || len(name) > 13 {
		return -1
	}
	for i, t := range tokenHeadersLower {
		if hop.FoldEqual(name, t) {
			return i
		}
	}
	return -1
}

// sameKindAgree refuses two token headers (Authorization: Bearer included) carrying tokens of
// the same kind with different values.
func sameKindAgree(values [3]string, seen [3]bool, h http.Header) error {
	type tok struct{ header, value string }
	var all [4]tok
	n := 0
	for i := range values {
		if seen[i] && values[i] != "" {
			all[n] = tok{tokenHeaders[i], values[i]}
			n++
		}
	}
	if v := h["Authorization"]; len(v) == 1 {
		if b, ok := hop.Bearer(v[0]); ok && strings.TrimSpace(b) != "" {
			all[n] = tok{"Authorization", strings.TrimSpace(b)}
			n++
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if all[i].value != all[j].value && tokenKindOf(all[i].value) == tokenKindOf(all[j].value) {
				return fmt.Errorf("%w: %s and %s carry different %s tokens", hop.ErrAmbiguousHeaders,
					all[i].header, all[j].header, tokenKindOf(all[i].value))
			}
		}
	}
	return nil
}

// tokenKindOf names a token's kind by its GitLab prefix ("glrt", "glcbt", ...) or "opaque".
func tokenKindOf(token string) string {
	if strings.HasPrefix(token, "gl") {
		if i := strings.IndexByte(token, '-'); i > 2 && i <= 12 {
			return token[:i]
		}
	}
	return "opaque"
}

// upgrade keeps a protocol switch only where the route allows it; any other Upgrade (h2c above
// all: a 101 to HTTP/2 would hand the client a raw connection to the cell) is removed, and the
// request goes on as plain HTTP/1.1.
func upgrade(h http.Header, rule Upgrade) {
	v, ok := h["Upgrade"]
	if !ok {
		return
	}
	want := ""
	switch rule {
	case UpgradeWebSocket:
		want = "websocket"
	case UpgradeTunnel:
		want = tunnel.UpgradeToken
	case UpgradeInternal:
		want = "websocket"
		if len(v) == 1 && (hop.FoldEqual(strings.TrimSpace(v[0]), tunnel.TCPUpgradeToken) || hop.FoldEqual(strings.TrimSpace(v[0]), tunnel.SpliceUpgradeToken)) {
			return
		}
	}
	if want != "" && len(v) == 1 && hop.FoldEqual(strings.TrimSpace(v[0]), want) {
		return
	}
	delete(h, "Upgrade")
}

// isForwardingHeader: Forwarded, X-Forwarded-*, X-Real-IP and X-Request-Id, in any spelling.
func isForwardingHeader(name string) bool {
	if len(name) == 0 {
		return false
	}
	switch name[0] | 0x20 {
	case 'f':
		return hop.FoldEqual(name, "forwarded")
	case 'x':
		return hop.FoldPrefix(name, "x-forwarded-") || hop.FoldEqual(name, "x-forwarded") ||
			hop.FoldEqual(name, "x-real-ip") || hop.FoldEqual(name, "x-request-id")
	}
	return false
}
