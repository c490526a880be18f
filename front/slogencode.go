package front

import (
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// The access log writes its lines itself but must stay byte for byte what log/slog's JSON and
// text handlers write, which operators' parsers and the integration tests read. These are slog's
// rules (Go 1.26, log/slog/json_handler.go, text_handler.go and handler.go), restated: the
// access log tests compare every line with the real handlers.

// slogSafe is slog's safeSet: the ASCII bytes a JSON string holds unescaped, all but the control
// characters, the double quote and the backslash (DEL included).
var slogSafe = func() (t [utf8.RuneSelf]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendSlogJSON appends s escaped as slog's JSON handler escapes it (appendEscapedJSONString),
// without the quotes: \n \r \t by name, other control bytes as \u00XX, invalid UTF-8 as \ufffd,
// and U+2028 and U+2029, which break JSONP, escaped too. Unlike hop.AppendJSONString (the error
// bodies'), DEL stays as it is.
func appendSlogJSON(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if slogSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

// appendSlogText appends s as slog's text handler writes a string value: bare, or Go-quoted
// when it is empty or holds a space, '=', a byte JSON would escape (the backslash aside), a
// Unicode space, a non-printable rune or invalid UTF-8 (needsQuoting).
func appendSlogText(b []byte, s string) []byte {
	if textNeedsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func textNeedsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c != '\\' && (c == ' ' || c == '=' || !slogSafe[c]) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// appendSlogTime appends a record's time as slog writes it: JSON (appendJSONTime) as RFC 3339
// with as many fraction digits as needed, text (appendRFC3339Millis) with exactly three.
func appendSlogTime(b []byte, t time.Time, text bool) []byte {
	if !text {
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	// RFC3339Nano trims trailing zeros: a tenth of a millisecond added after truncating keeps
	// four fraction digits, and the fourth is dropped.
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	b = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}
