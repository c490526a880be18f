package h1

import "bytes"

// Limits bound what Parse reads of one head; beyond them the bytes are handed off, for net/http
// to answer (431 and the like) as it would.
type Limits struct {
	MaxHead    int // bytes of the request line and headers, CRLFs included
	MaxHeaders int // header fields
}

// Edge's limits.max_header_bytes default, and a header count no runner nears.
const (
	DefaultMaxHead    = 32 << 10
	DefaultMaxHeaders = 100
)

// Parse reads one request head from the start of buf into r (its Headers reused). With Accept, n
// is the head's length: the body, if any, starts at buf[n].
func Parse(buf []byte, r *Request, l Limits) (n int, v Verdict) {
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		if len(buf) > l.MaxHead || bytes.IndexByte(buf, '\n') >= 0 && !crlfOnly(buf) {
			return 0, HandOff
		}
		if !plausibleStart(buf) {
			return 0, HandOff
		}
		return 0, NeedMore
	}
	n = end + len(crlfcrlf)
	if n > l.MaxHead {
		return 0, HandOff
	}
	head := buf[:end+2] // every line with its CRLF
	if !crlfOnly(head) {
		return 0, HandOff // a bare CR or LF: net/http reads lines its own way
	}
	*r = Request{Headers: r.Headers[:0], ContentLength: -1}
	line, rest := cutLine(head)
	if !requestLine(line, r) {
		return 0, HandOff
	}
	var f fields
	var ok bool
	if r.Headers, ok = headerLines(rest, r.Headers, l.MaxHeaders, func(h Header) bool { return f.note(h, r) }); !ok || !f.settle(r) {
		return 0, HandOff
	}
	return n, Accept
}

var crlfcrlf = []byte("\r\n\r\n")

// crlfOnly says whether every CR in b is followed by LF and every LF preceded by CR.
func crlfOnly(b []byte) bool {
	for i, c := range b {
		switch c {
		case '\r':
			if i+1 < len(b) && b[i+1] != '\n' {
				return false
			}
		case '\n':
			if i == 0 || b[i-1] != '\r' {
				return false
			}
		}
	}
	return true
}

// plausibleStart says whether an incomplete head can still become one Parse accepts: a method of
// token bytes so far. The HTTP/2 preface and TLS bytes on the plain port leave at once.
func plausibleStart(b []byte) bool {
	for i, c := range b {
		if c == ' ' {
			return i > 0
		}
		if !isTchar(c) {
			return false
		}
	}
	return true
}

// cutLine splits the line before the first CRLF off b.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\r')
	return b[:i], b[i+2:]
}

// headerLines reads a head's header lines into hs, each passed to take first; false: the head is
// handed off (a line outside the subset, too many fields, or one take refuses).
func headerLines(rest []byte, hs []Header, max int, take func(Header) bool) ([]Header, bool) {
	for len(rest) > 0 {
		var line []byte
		line, rest = cutLine(rest)
		h, ok := headerLine(line)
		if !ok || len(hs) == max || !take(h) {
			return hs, false
		}
		hs = append(hs, h)
	}
	return hs, true
}

// requestLine reads "METHOD /target HTTP/1.x".
func requestLine(line []byte, r *Request) bool {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || !allTchar(line[:sp]) {
		return false
	}
	r.Method, line = line[:sp], line[sp+1:]
	sp = bytes.IndexByte(line, ' ')
	if sp <= 0 || !originForm(line[:sp]) {
		return false
	}
	r.Target, line = line[:sp], line[sp+1:]
	switch string(line) {
	case "HTTP/1.1":
		r.Minor = 1
	case "HTTP/1.0":
		r.Minor = 0
	default:
		return false
	}
	return string(r.Method) != "CONNECT" && string(r.Method) != "PRI"
}

// originForm is a target net/http reads as edge does: "/" then visible ASCII, no fragment, every
// "%" starting a valid escape.
func originForm(t []byte) bool {
	if len(t) == 0 || t[0] != '/' {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c <= ' ' || c >= 0x7f || c == '#':
			return false
		case c == '%':
			if i+2 >= len(t) || !isHex(t[i+1]) || !isHex(t[i+2]) {
				return false
			}
		}
	}
	return true
}

// headerLine reads "Name: value" with optional whitespace around the value.
func headerLine(line []byte) (Header, bool) {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 || !allTchar(line[:colon]) {
		return Header{}, false // no name, or whitespace or a separator in it (obs-fold too)
	}
	v := line[colon+1:]
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	for _, c := range v {
		if (c < ' ' && c != '\t') || c >= 0x7f {
			return Header{}, false
		}
	}
	return Header{Name: line[:colon], Value: v}, true
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func allTchar(b []byte) bool {
	for _, c := range b {
		if !isTchar(c) {
			return false
		}
	}
	return len(b) > 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
