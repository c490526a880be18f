package main

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"

	"gitlab.com/edge/edge/config"
)

// certificates is the public listener's static certificate (tls.static); a reload swaps it, and
// new handshakes see the new one.
type certificates struct {
	cert atomic.Pointer[tls.Certificate]
}

// parseStatic reads a config's static certificate; nil without one.
func parseStatic(cfg *config.Config) (*tls.Certificate, error) {
	if cfg.TLS == nil || cfg.TLS.Static == nil {
		return nil, nil
	}
	c, err := tls.X509KeyPair(cfg.TLS.Static.CertPEM, cfg.TLS.Static.KeyPEM)
	if err != nil {
		return nil, usageError{Err: fmt.Errorf("tls.static: %w", err)}
	}
	return &c, nil
}

// tlsConfig serves the current certificate, HTTP/2 and HTTP/1.1 (WebSockets and the agents'
// tunnel upgrade need HTTP/1.1; clients that offer both choose).
func (c *certificates) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cert.Load(), nil
		},
	}
}
