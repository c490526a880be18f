package cellrouter

import (
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"gitlab.com/edge/edge/hop"
)

// A request edge writes to its cell itself goes out byte for byte as ReverseProxy (Rewrite,
// SetURL, hop.SetForwarded) and Request.Write send it: the same fields, values and order. What
// that takes is below; TestDirectSendsWhatReverseProxySends holds the two side by side.

// field is one header field of the outgoing request.
type field struct {
	key    string
	values []string
}

// outFields are the outgoing request's fields, in place of ReverseProxy's clone of the header
// map: a short list, searched in order.
type outFields []field

func (f *outFields) at(key string) int {
	for i := range *f {
		if (*f)[i].key == key {
			return i
		}
	}
	return -1
}

func (f *outFields) Values(key string) []string {
	if i := f.at(key); i >= 0 {
		return (*f)[i].values
	}
	return nil
}

func (f *outFields) Put(key string, values []string) {
	if i := f.at(key); i >= 0 {
		(*f)[i].values = values
		return
	}
	*f = append(*f, field{key, values})
}

func (f *outFields) Del(key string) {
	if i := f.at(key); i >= 0 {
		*f = slices.Delete(*f, i, i+1)
	}
}

// isHopByHop: a field ReverseProxy removes both ways (besides those Connection names).
func isHopByHop(key string) bool {
	switch key {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// connectionNamed are the canonical names a Connection field lists: hop-by-hop too.
func connectionNamed(values []string) []string {
	var named []string
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if t = textproto.TrimString(t); t != "" {
				named = append(named, textproto.CanonicalMIMEHeaderKey(t))
			}
		}
	}
	return named
}

// outgoing fills f with r's fields as they leave for the cell.
func outgoing(f *outFields, r *http.Request) {
	named := connectionNamed(r.Header["Connection"])
	for k, v := range r.Header {
		switch {
		case isHopByHop(k) || slices.Contains(named, k):
		case k == "Forwarded" || k == "X-Forwarded-For" || k == "X-Forwarded-Host" || k == "X-Forwarded-Proto":
			// ReverseProxy drops the client's before Rewrite; SetForwarded puts back the trusted ones.
		default:
			*f = append(*f, field{k, v})
		}
	}
	if httpguts.HeaderValuesContainsToken(r.Header["Te"], "trailers") {
		f.Put("Te", []string{"trailers"})
	}
	hop.Forward(f, r)
	slices.SortFunc(*f, func(a, b field) int { return strings.Compare(a.key, b.key) })
}

// appendRequest appends the request head (and body) edge sends the cell for r, to host.
func appendRequest(b []byte, r *http.Request, host string, f outFields, body []byte) []byte {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	b = append(b, method...)
	b = append(b, ' ')
	// r.URL.RequestURI(), without making the string: direct requests have no Opaque.
	if path := r.URL.EscapedPath(); path != "" {
		b = append(b, path...)
	} else {
		b = append(b, '/')
	}
	if r.URL.ForceQuery || r.URL.RawQuery != "" {
		b = append(b, '?')
		b = append(b, r.URL.RawQuery...)
	}
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if ua := f.Values("User-Agent"); len(ua) > 0 && ua[0] != "" {
		b = append(b, "User-Agent: "...)
		b = append(b, fieldValue(ua[0])...)
		b = append(b, "\r\n"...)
	}
	if len(body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	for _, kv := range f {
		switch kv.key {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !httpguts.ValidHeaderFieldName(kv.key) {
			continue // Request.Write drops it too
		}
		for _, v := range kv.values {
			b = append(b, kv.key...)
			b = append(b, ": "...)
			b = append(b, fieldValue(v)...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	return append(b, body...)
}

// fieldValue is v as Request.Write writes it: line breaks made spaces, the ends trimmed.
func fieldValue(v string) string {
	if v == "" || strings.IndexByte(v, '\r') < 0 && strings.IndexByte(v, '\n') < 0 && !isSpace(v[0]) && !isSpace(v[len(v)-1]) {
		return v
	}
	return textproto.TrimString(strings.NewReplacer("\n", " ", "\r", " ").Replace(v))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// cleanQuery: ReverseProxy would send the query as it came (it re-encodes one with a ';' or a
// bad escape).
func cleanQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
