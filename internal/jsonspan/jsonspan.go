// Package jsonspan finds where values stand in JSON text without decoding it: the end of a
// value, the members of an object, one member by name, and a string literal's value. proxy
// reads a runner's token out of a request body with it; aggregate edits list items in place.
//
// It accepts the JSON grammar exactly (what encoding/json accepts is what it accepts, up to the
// nesting limit the caller gives), so a span it returns is one the receiver's parser agrees on.
package jsonspan

import "unicode/utf8"

// MaxDepth is encoding/json's nesting limit, for text a JSON decoder has accepted or will.
const MaxDepth = 10000

// Space returns the index of the first byte at or after i that is not JSON white space.
func Space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// End returns the index just past the JSON value starting at b[i], or ok false when no
// well-formed value starts there (cut short, malformed, or nested deeper than maxDepth).
func End(b []byte, i, maxDepth int) (end int, ok bool) {
	s := scanner{data: b, pos: i, maxDepth: maxDepth}
	if !s.value(0) {
		return 0, false
	}
	return s.pos, true
}

// Object walks the members of the object starting at b[i] (after any white space), calling
// member with each quoted key and the span of its value, in order. member returns true to stop
// there: Object then returns at once, ok true, whatever follows. Otherwise Object returns the
// index just past the object, or ok false when the text is not a well-formed object.
func Object(b []byte, i, maxDepth int, member func(key []byte, start, end int) (stop bool)) (end int, ok bool) {
	s := scanner{data: b, pos: i, maxDepth: maxDepth}
	s.space()
	if !s.consume('{') {
		return 0, false
	}
	s.space()
	if s.consume('}') {
		return s.pos, true
	}
	for {
		s.space()
		kStart := s.pos
		if !s.skipString() {
			return 0, false
		}
		key := s.data[kStart:s.pos]
		s.space()
		if !s.consume(':') {
			return 0, false
		}
		s.space()
		vStart := s.pos
		if !s.value(0) {
			return 0, false
		}
		if member(key, vStart, s.pos) {
			return s.pos, true
		}
		s.space()
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return s.pos, true
		}
		return 0, false
	}
}

// Field finds the first member named key of the object starting at b[i]: the span of its value,
// found false when the object has no such member, ok false when the text is not a well-formed
// object as far as Field read it.
func Field(b []byte, i, maxDepth int, key string) (start, end int, found, ok bool) {
	_, ok = Object(b, i, maxDepth, func(k []byte, s, e int) bool {
		if KeyEquals(k, key) {
			start, end, found = s, e, true
		}
		return found
	})
	if !ok {
		return 0, 0, false, false
	}
	return start, end, found, true
}

// KeyEquals compares a quoted JSON key with a plain name, unescaping only when needed.
func KeyEquals(quoted []byte, name string) bool {
	if len(quoted) == len(name)+2 && string(quoted[1:len(quoted)-1]) == name {
		return true
	}
	for _, c := range quoted {
		if c == '\\' {
			k, ok := Unquote(quoted)
			return ok && k == name
		}
	}
	return false
}

type scanner struct {
	data     []byte
	pos      int
	maxDepth int
}

func (s *scanner) space() { s.pos = Space(s.data, s.pos) }

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

func (s *scanner) value(depth int) bool {
	if depth > s.maxDepth || s.pos >= len(s.data) {
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		return s.composite('}', depth, true)
	case c == '[':
		return s.composite(']', depth, false)
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

func (s *scanner) composite(end byte, depth int, object bool) bool {
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
		if !s.value(depth + 1) {
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
// receiver's parser calls valid.
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

// Unquote decodes a JSON string literal, including \u escapes and surrogate pairs. Invalid UTF-8
// is replaced with U+FFFD as encoding/json does.
func Unquote(q []byte) (string, bool) {
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

// unicodeEscape decodes a \u escape with its four hex digits (and a following low surrogate)
// at the start of b, returning the rune and the number of bytes consumed.
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
