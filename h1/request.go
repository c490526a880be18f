// Package h1 reads HTTP/1.1 requests in place, for edge's own connection engine: a strict subset
// of what net/http's server accepts. A request head inside the subset is parsed without an
// allocation into a Request whose fields point into the caller's buffer; anything outside it
// (HTTP/2's preface, upgrades, obsolete line folding, odd whitespace, duplicate or conflicting
// Content-Length, Transfer-Encoding other than one "chunked", absolute-form targets, oversize
// heads, bare LF line ends, bytes net/http would refuse) is handed off: the caller gives the bytes
// it read to net/http, which answers or refuses them as it always has. The engine never refuses
// on its own, so it cannot refuse what net/http serves, and it never accepts what net/http would
// read differently (FuzzAgainstNetHTTP holds both).
package h1

// Request is one request head. Its byte slices point into the buffer Parse read; they are valid
// until the caller reuses that buffer.
type Request struct {
	Method []byte
	Target []byte // origin-form, as sent
	Minor  int    // HTTP/1.Minor: 0 or 1
	Host   []byte
	// Headers are the header fields as sent, Host included, in order: names as sent, values
	// without the optional whitespace around them.
	Headers []Header
	// ContentLength is the body's length by Content-Length; -1: none given. Chunked: the body is
	// chunked (then ContentLength is -1).
	ContentLength int64
	Chunked       bool
	// Close: the connection ends after this request's answer (Connection: close, or HTTP/1.0
	// without keep-alive).
	Close bool
	// Expect100: the client waits for 100 Continue before its body.
	Expect100 bool
}

// Header is one header field.
type Header struct {
	Name, Value []byte
}

// Verdict is what Parse made of the bytes.
type Verdict uint8

const (
	// Accept: a whole head inside the subset, parsed.
	Accept Verdict = iota
	// NeedMore: no whole head yet, and nothing so far outside the subset.
	NeedMore
	// HandOff: the bytes are for net/http.
	HandOff
)

func (v Verdict) String() string {
	switch v {
	case Accept:
		return "accept"
	case NeedMore:
		return "need_more"
	}
	return "hand_off"
}
