package h1

import "bytes"

// fields gathers the header fields that frame the request or change the connection, as net/http
// reads them: the names compared without case.
type fields struct {
	hosts, lengths, encodings, expects int
	keepAlive, close                   bool
}

// note takes one header field; false hands the request off (a field net/http reads in a way the
// engine does not follow: an upgrade, HTTP/2 settings, a trailer announcement).
func (f *fields) note(h Header, r *Request) bool {
	switch {
	case fold(h.Name, "host"):
		f.hosts++
		r.Host = h.Value
		return validHost(h.Value)
	case fold(h.Name, "content-length"):
		f.lengths++
		n, ok := decimal(h.Value)
		r.ContentLength = n
		return ok
	case fold(h.Name, "transfer-encoding"):
		f.encodings++
		r.Chunked = string(h.Value) == "chunked"
		return r.Chunked
	case fold(h.Name, "expect"):
		f.expects++
		r.Expect100 = asciiFold(h.Value, "100-continue")
		return r.Expect100
	case fold(h.Name, "connection"):
		return f.tokens(h.Value)
	case fold(h.Name, "upgrade"), fold(h.Name, "http2-settings"), fold(h.Name, "trailer"), fold(h.Name, "te"):
		return false
	}
	return true
}

// tokens reads a Connection header: close and keep-alive are known; any other token names a
// hop-by-hop header, which net/http's ReverseProxy handles and the engine leaves to it.
func (f *fields) tokens(v []byte) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte(","))
		t = bytes.Trim(t, " \t")
		switch {
		case len(t) == 0:
		case asciiFold(t, "close"):
			f.close = true
		case asciiFold(t, "keep-alive"):
			f.keepAlive = true
		default:
			return false
		}
	}
	return true
}

// settle checks the fields as a whole: one Host, a length or chunked framing (not both, and
// chunked only in HTTP/1.1), at most one Expect, and whether the connection stays open.
func (f *fields) settle(r *Request) bool {
	if f.hosts != 1 || f.lengths > 1 || f.encodings > 1 || f.expects > 1 {
		return false
	}
	if r.Chunked && (f.lengths > 0 || r.Minor == 0) {
		return false
	}
	if r.Expect100 && r.Minor == 0 {
		return false
	}
	r.Close = f.close || r.Minor == 0 && !f.keepAlive
	return true
}

// decimal reads a Content-Length: 1 to 18 digits.
func decimal(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return -1, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return -1, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// validHost is a host[:port] of letters, digits, dots, hyphens, underscores and an IPv6
// literal's brackets and colons: a subset of what net/http takes.
func validHost(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']':
		default:
			return false
		}
	}
	return true
}

// fold compares a header name with a lower-case one, as net/http's canonical keys do.
func fold(name []byte, lower string) bool { return asciiFold(name, lower) }

// asciiFold compares b with a lower-case ASCII string without case.
func asciiFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
