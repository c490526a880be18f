package hop

import (
	"net/http"
	"unicode/utf8"
)

// Write is edge's one error answer, on every listener and for every package: a small JSON
// body {"error": cause, "message": message} that names the problem and never echoes a token.
func Write(w http.ResponseWriter, status int, cause, message string) {
	if rec := RecordOf(w); rec != nil {
		rec.Cause = cause
	}
	if status == StatusClientClosed {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	body := make([]byte, 0, 64+len(message))
	body = append(body, `{"error":`...)
	body = appendJSONString(body, cause)
	body = append(body, `,"message":`...)
	body = appendJSONString(body, message)
	body = append(body, "}\n"...)
	_, _ = w.Write(body)
}

// Error answers err with its mapped status.
func Error(w http.ResponseWriter, err error) {
	status, cause := StatusOf(err)
	Write(w, status, cause, err.Error())
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced, so an error body stays valid JSON whatever a path held.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
