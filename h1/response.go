package h1

import "bytes"

// Response is one answer head read from a cell, in place like Request.
type Response struct {
	Minor   int
	Status  int
	Reason  []byte
	Headers []Header
	// ContentLength is the body's length; -1: none given. NoBody: the status (1xx, 204, 304) or
	// the request (HEAD) has none, whatever the headers say.
	ContentLength int64
	Chunked       bool
	NoBody        bool
	Close         bool
}

// ParseResponse reads one answer head from the start of buf into r, for a request whose method
// was HEAD when head is true. Inside the subset: HTTP/1.0 or 1.1, a three-digit status, header
// fields as for requests, and a body framed by one Content-Length or by chunked alone (or none by
// its status); an answer read to the connection's end, or anything else, is handed off to
// net/http's reader.
func ParseResponse(buf []byte, r *Response, head bool, l Limits) (n int, v Verdict) {
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		if len(buf) > l.MaxHead || !crlfOnly(buf) || !bytes.HasPrefix([]byte("HTTP/1."), buf[:min(len(buf), 7)]) {
			return 0, HandOff
		}
		return 0, NeedMore
	}
	n = end + len(crlfcrlf)
	lines := buf[:end+2]
	if n > l.MaxHead || !crlfOnly(lines) {
		return 0, HandOff
	}
	*r = Response{Headers: r.Headers[:0], ContentLength: -1}
	line, rest := cutLine(lines)
	if !statusLine(line, r) {
		return 0, HandOff
	}
	var lengths, encodings int
	var f fields
	take := func(h Header) bool {
		switch {
		case fold(h.Name, "content-length"):
			lengths++
			cl, ok := decimal(h.Value)
			r.ContentLength = cl
			return ok
		case fold(h.Name, "transfer-encoding"):
			encodings++
			r.Chunked = string(h.Value) == "chunked"
			return r.Chunked
		case fold(h.Name, "connection"):
			return f.tokens(h.Value)
		case fold(h.Name, "trailer"):
			return false
		}
		return true
	}
	var ok bool
	if r.Headers, ok = headerLines(rest, r.Headers, l.MaxHeaders, take); !ok {
		return 0, HandOff
	}
	if lengths > 1 || encodings > 1 || r.Chunked && (lengths > 0 || r.Minor == 0) {
		return 0, HandOff
	}
	r.NoBody = head || r.Status < 200 || r.Status == 204 || r.Status == 304
	if !r.NoBody && !r.Chunked && r.ContentLength < 0 {
		return 0, HandOff // read to the connection's end
	}
	r.Close = f.close || r.Minor == 0 && !f.keepAlive
	return n, Accept
}

// statusLine reads "HTTP/1.x NNN reason" (the reason may be empty).
func statusLine(line []byte, r *Response) bool {
	switch {
	case bytes.HasPrefix(line, []byte("HTTP/1.1 ")):
		r.Minor = 1
	case bytes.HasPrefix(line, []byte("HTTP/1.0 ")):
		r.Minor = 0
	default:
		return false
	}
	line = line[len("HTTP/1.1 "):]
	if len(line) < 3 || len(line) > 3 && line[3] != ' ' {
		return false
	}
	for _, c := range line[:3] {
		if c < '0' || c > '9' {
			return false
		}
		r.Status = r.Status*10 + int(c-'0')
	}
	if r.Status < 100 {
		return false
	}
	if len(line) > 3 {
		r.Reason = line[4:]
	}
	for _, c := range r.Reason {
		if (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}
