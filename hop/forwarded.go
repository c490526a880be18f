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
	// The values edge sets share one array, each slice capped at its own.
	set := make([]string, 0, 4)
	value := func(v string) []string {
		set = append(set, v)
		return set[len(set)-1 : len(set) : len(set)]
	}
	ip, _, err := net.SplitHostPort(in.RemoteAddr)
	if err == nil {
		xff := ip
		if prior := out.Values("X-Forwarded-For"); len(prior) > 0 {
			xff = strings.Join(prior, ", ") + ", " + ip
		}
		out.Put("X-Forwarded-For", value(xff))
	} else {
		out.Del("X-Forwarded-For")
	}
	if v, ok := in.Header["X-Forwarded-Host"]; ok {
		out.Put("X-Forwarded-Host", v)
	} else {
		out.Put("X-Forwarded-Host", value(in.Host))
	}
	if v, ok := in.Header["X-Forwarded-Proto"]; ok {
		out.Put("X-Forwarded-Proto", v)
	} else if in.TLS == nil {
		out.Put("X-Forwarded-Proto", value("http"))
	} else {
		out.Put("X-Forwarded-Proto", value("https"))
	}
	if _, ok := in.Header["X-Real-Ip"]; ok {
		return
	}
	if err == nil {
		out.Put("X-Real-Ip", value(ip))
	} else {
		out.Del("X-Real-Ip")
	}
}
