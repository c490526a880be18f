package hop

import (
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
)

// Fields are an outgoing request's header fields as the forwarding policy edits them:
// ReverseProxy's http.Header, or the list of a request edge writes itself.
type Fields interface {
	Values(key string) []string
	Put(key string, values []string)
	Del(key string)
}

// HeaderFields are http.Header's map as Fields.
type HeaderFields http.Header

func (h HeaderFields) Values(key string) []string      { return h[key] }
func (h HeaderFields) Put(key string, values []string) { h[key] = values }
func (h HeaderFields) Del(key string)                  { delete(h, key) }

// SetForwarded sets X-Forwarded-* and X-Real-Ip from edge's own view. The front has already
// removed an untrusted peer's forwarding headers, so any left on the incoming request come from
// a trusted proxy (or another edge): its chain is extended, its host, proto and client address
// kept. ReverseProxy has removed Forwarded and X-Forwarded-{For,Host,Proto} from the outgoing
// request before Rewrite.
func SetForwarded(pr *httputil.ProxyRequest) { Forward(HeaderFields(pr.Out.Header), pr.In) }

// Forward is SetForwarded on any Fields; keys are canonical. The chain is extended as
// httputil.ProxyRequest.SetXForwarded extends it.
func Forward(out Fields, in *http.Request) {
	for _, k := range [...]string{"X-Forwarded-For", "Forwarded"} {
		if v, ok := in.Header[k]; ok {
			out.Put(k, v)
		}
	}
	if ip, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		if prior := out.Values("X-Forwarded-For"); len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		out.Put("X-Forwarded-For", []string{ip})
	} else {
		out.Del("X-Forwarded-For")
	}
	if v, ok := in.Header["X-Forwarded-Host"]; ok {
		out.Put("X-Forwarded-Host", v)
	} else {
		out.Put("X-Forwarded-Host", []string{in.Host})
	}
	if v, ok := in.Header["X-Forwarded-Proto"]; ok {
		out.Put("X-Forwarded-Proto", v)
	} else if in.TLS == nil {
		out.Put("X-Forwarded-Proto", []string{"http"})
	} else {
		out.Put("X-Forwarded-Proto", []string{"https"})
	}
	if _, ok := in.Header["X-Real-Ip"]; ok {
		return
	}
	if ip, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		out.Put("X-Real-Ip", []string{ip})
	} else {
		out.Del("X-Real-Ip")
	}
}
