package bench

import (
	"encoding/json"
	"fmt"
)

// HAProxyConfig is HAProxy set up like NginxConfig: one thread, keep-alive to the upstream with
// idle connections shared between clients (http-reuse always, as nginx's keepalive pool does),
// no log section at all, so it logs nothing. The timeouts are there because HAProxy warns and
// waits forever without them.
func HAProxyConfig(listenPort, upstreamPort int) string {
	return fmt.Sprintf(`global
    nbthread 1
    maxconn 4096

defaults
    mode http
    option http-keep-alive
    http-reuse always
    maxconn 4096
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-request 10s
    timeout http-keep-alive 30s

frontend bench
    bind 127.0.0.1:%d
    default_backend bench_upstream

backend bench_upstream
    server u1 127.0.0.1:%d
`, listenPort, upstreamPort)
}

// CaddyConfig is Caddy's JSON config for the same proxy: one plain-HTTP server whose only route
// is reverse_proxy to the upstream, up to 64 idle upstream connections (nginx's keepalive 64;
// Caddy's default is 32), no access log (Caddy logs requests only when a server asks for it),
// the admin endpoint off, and the config not saved anywhere.
func CaddyConfig(listenPort, upstreamPort int) (string, error) {
	type obj = map[string]any
	cfg := obj{
		"admin":   obj{"disabled": true, "config": obj{"persist": false}},
		"logging": obj{"logs": obj{"default": obj{"level": "WARN"}}},
		"apps": obj{"http": obj{"servers": obj{"bench": obj{
			"listen":          []string{fmt.Sprintf("127.0.0.1:%d", listenPort)},
			"protocols":       []string{"h1"},
			"automatic_https": obj{"disable": true},
			"routes": []obj{{"handle": []obj{{
				"handler":   "reverse_proxy",
				"upstreams": []obj{{"dial": fmt.Sprintf("127.0.0.1:%d", upstreamPort)}},
				"transport": obj{"protocol": "http", "keep_alive": obj{"max_idle_conns_per_host": 64}},
			}}}},
		}}}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", fmt.Errorf("caddy config: %w", err)
	}
	return string(b) + "\n", nil
}
