package proxy

import (
	"strconv"
	"unicode/utf8"
)

// topLevelString returns the value of the last top-level member named key when it is a JSON
// string. The last one wins because Rack, and so the cell, keeps the last of duplicate keys: edge
// must route on the token the cell will authenticate. A prefix cut short by the body limit or
// malformed JSON yields ok=false, never a guess.
func topLevelString(data []byte, key string) (value string, ok bool) {
	raw, found := topLevelMember(data, key, true)
	if !found || len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	return unquote(raw)
}

// topLevelUint reads a top-level unsigned integer member. It stops at the first occurrence
// and tolerates a truncated remainder, since a job answer is read only as far as needed.
func topLevelUint(data []byte, key string) (uint64, bool) {
	raw, found := topLevelMember(data, key, false)
	if !found {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return n, err == nil
}

// topLevelMember scans an object and returns the raw bytes of the member's value. With last set,
// the whole object must be well formed and the last occurrence is returned.
func topLevelMember(data []byte, key string, last bool) (raw []byte, found bool) {
	s := scanner{data: data}
	s.space()
	if !s.consume('{') {
		return nil, false
	}
	s.space()
	if s.consume('}') {
		return nil, false
	}
	for {
		s.space()
		kStart := s.pos
		if !s.skipString() {
			return nil, false
		}
		k := s.data[kStart:s.pos]
		s.space()
		if !s.consume(':') {
			return nil, false
		}
		s.space()
		vStart := s.pos
		if !s.skipValue(0) {
			return nil, false
		}
		if keyEquals(k, key) {
			raw, found = s.data[vStart:s.pos], true
			if !last {
				return raw, true
			}
		}
		s.space()
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			s.space()
			if s.pos != len(s.data) {
				return nil, false
			}
			return raw, found
		}
		return nil, false
	}
}

// keyEquals compares a quoted JSON key with a plain ASCII name, unescaping only when needed.
func keyEquals(quoted []byte, name string) bool {
	if len(quoted) == len(name)+2 && string(quoted[1:len(quoted)-1]) == name {
		return true
	}
	for _, c := range quoted {
		if c == '\\' {
			k, ok := unquote(quoted)
			return ok && k == name
		}
	}
	return false
}

const maxDepth = 64

type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

func (s *scanner) skipString() bool {
	if !s.consume('"') {
		return false
	}
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return true
		case c == '\\':
			if !s.escape() {
				return false
			}
		case c < 0x20:
			return false
		default:
			s.pos++
		}
	}
	return false
}

func (s *scanner) escape() bool {
	if s.pos+1 >= len(s.data) {
		return false
	}
	switch s.data[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
		return true
	case 'u':
		if _, ok := hex4(s.data[s.pos:]); ok {
			s.pos += 6
			return true
		}
	}
	return false
}

func (s *scanner) skipValue(depth int) bool {
	if depth > maxDepth || s.pos >= len(s.data) {
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		return s.skipComposite('}', depth, true)
	case c == '[':
		return s.skipComposite(']', depth, false)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *scanner) skipComposite(end byte, depth int, object bool) bool {
	s.pos++
	s.space()
	if s.consume(end) {
		return true
	}
	for {
		s.space()
		if object {
			if !s.skipString() {
				return false
			}
			s.space()
			if !s.consume(':') {
				return false
			}
			s.space()
		}
		if !s.skipValue(depth + 1) {
			return false
		}
		s.space()
		if s.consume(',') {
			continue
		}
		return s.consume(end)
	}
}

func (s *scanner) literal(lit string) bool {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	return false
}

// number accepts the JSON number grammar exactly, so that what edge calls valid is what the
// cell's parser calls valid.
func (s *scanner) number() bool {
	s.consume('-')
	switch {
	case s.consume('0'):
	case s.digits() == 0:
		return false
	}
	if s.consume('.') && s.digits() == 0 {
		return false
	}
	if s.consume('e') || s.consume('E') {
		if !s.consume('+') {
			s.consume('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) digits() int {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - start
}

// unquote decodes a JSON string literal, including \u escapes and surrogate pairs. Invalid UTF-8
// is replaced with U+FFFD as encoding/json does.
func unquote(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	body := q[1 : len(q)-1]
	simple := true
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return string(body), true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 >= len(body) {
				return "", false
			}
			i++
			switch body[i] {
			case '"', '\\', '/':
				out = append(out, body[i])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, n, ok := unicodeEscape(body[i-1:])
				if !ok {
					return "", false
				}
				out = utf8.AppendRune(out, r)
				i += n - 2
			default:
				return "", false
			}
			i++
		case c == '"' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			out = utf8.AppendRune(out, r)
			i += size
		}
	}
	return string(out), true
}

// unicodeEscape decodes \uXXXX (and a following low surrogate) at the start of b, returning the
// rune and the number of bytes consumed.
func unicodeEscape(b []byte) (rune, int, bool) {
	r, ok := hex4(b)
	if !ok {
		return 0, 0, false
	}
	if r >= 0xD800 && r < 0xDC00 {
		if lo, ok := hex4(b[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 12, true
		}
		return utf8.RuneError, 6, true
	}
	if r >= 0xDC00 && r < 0xE000 {
		return utf8.RuneError, 6, true
	}
	return r, 6, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
