package wire

import (
	"net"
	"net/http"
	"time"
)

// NewTransport is edge's http.Transport to its backends (cells, other edges): bodies pass as sent,
// no proxy from the environment, many idle connections per host, the given timeouts.
func NewTransport(dialer *net.Dialer, dialTimeout, responseHeaderTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   dialTimeout,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: responseHeaderTimeout,
		// Bodies pass through as the cell sent them; the transport must not ask for gzip on
		// the client's behalf and inflate the answer.
		DisableCompression: true,
	}
}
