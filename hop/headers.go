package hop

import (
	"errors"
	"net"
	"net/http"
	"strings"
)

// HeaderRequestID carries a request's id: kept from a trusted proxy, otherwise made here; sent
// upstream and returned to the client.
const HeaderRequestID = "X-Request-Id"

// Routing headers between edges and to agents. Clients cannot send them: every Edge-* header
// is removed from what arrives on the public listener.
const (
	HeaderAgentID      = "Edge-Agent-Id"
	HeaderConnectionID = "Edge-Connection-Id"
	HeaderPort         = "Edge-Port"
	HeaderHop          = "Edge-Hop"
	HeaderNotHere      = "Edge-Not-Here"
)

// StripEdgeHeaders removes edge's own headers in every spelling: what an edge does before a
// request leaves for an agent's upstream or a cell.
func StripEdgeHeaders(h http.Header) {
	for k := range h {
		if FoldPrefix(k, "edge-") {
			delete(h, k)
		}
	}
}

// Bearer is the token of an Authorization: Bearer value.
func Bearer(v string) (string, bool) {
	const prefix = "bearer "
	if len(v) > len(prefix) && strings.EqualFold(v[:len(prefix)], prefix) {
		return v[len(prefix):], true
	}
	return "", false
}

// Backends do not all see header names as Go does: Rack, CGI and nginx turn '-' into '_' and
// upper-case the name, so Edge_Cell, EDGE-CELL and Edge-Cell reach them as one variable. Header
// rules therefore compare names case-insensitively with '_' taken for '-'.

// FoldEqual compares a header name with a lower-case, '-'-spelled one.
func FoldEqual(name, lower string) bool {
	return len(name) == len(lower) && FoldPrefix(name, lower)
}

// FoldPrefix tells whether a header name begins with a lower-case, '-'-spelled prefix.
func FoldPrefix(name, lower string) bool {
	if len(name) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		if foldByte(name[i]) != lower[i] {
			return false
		}
	}
	return true
}

// foldByte lower-cases ASCII letters and reads '_' as '-'.
func foldByte(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_':
		return '-'
	}
	return c
}

// IsTimeout tells a deadline passing. A connection's own error is asserted first: the reuse
// check of every idle stream asks, and errors.As costs a reflection walk.
func IsTimeout(err error) bool {
	if ne, ok := err.(net.Error); ok {
		return ne.Timeout()
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
