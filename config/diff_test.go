package config

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"internal.key", "moved.key", "gitlab.key"} {
		writeFile(t, dir, name, secret32)
	}
	writeFile(t, dir, "other.key", secret32+"x")
	writeFile(t, dir, "agent.key", secret32+"agent")
	base := []string{
		"listen: {public: \":8080\", ops: \"127.0.0.1:9090\", internal: \"127.0.0.1:8081\", advertise_internal: \"http://127.0.0.1:8081\"}", // 1
		"cells:", // 2
		`  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-10"]}`, // 3
		"internal: {secret_file: internal.key}",                                        // 4
		"registry: {redis: {addr: \"127.0.0.1:6379\"}}",                                // 5
		"agents: {keys: [{alg: HS256, file: agent.key}]}",                              // 6
		"gitlab_api: {secret_file: gitlab.key}",                                        // 7
		"routing: {trusted_proxies: [10.0.0.1]}",                                       // 8
	}
	edit := func(line int, s string) []string {
		ls := append([]string(nil), base...)
		if line > len(ls) {
			return append(ls, s)
		}
		ls[line-1] = s
		return ls
	}
	tests := []struct {
		name string
		src  []string
		want string
	}{
		{"same", base, ""},
		{"spelt differently", edit(8, "routing: {trusted_proxies: [10.0.0.1/32]}"), ""},
		{"secret file moved, same secret", edit(4, "internal: {secret_file: moved.key}"), ""},
		{"default written out", edit(9, "log: {access: true, level: info}"), ""},
		{"preserve_host true written out", edit(3, `  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-10"], preserve_host: true}`), ""},
		{"peers reordered", edit(4, "internal: {secret_file: internal.key, peers: [192.168.0.0/16, 10.0.0.0/8, 127.0.0.0/8, \"::1\", 172.16.0.0/12, \"fc00::/7\"]}"), ""},
		{"listen.public", edit(1, "listen: {public: \":8081\", ops: \"127.0.0.1:9090\", internal: \"127.0.0.1:8082\", advertise_internal: \"http://127.0.0.1:8082\"}"), "listen.public listen.internal listen.advertise_internal"},
		{"listen.ops", edit(1, "listen: {public: \":8080\", ops: \"127.0.0.1:9091\", internal: \"127.0.0.1:8081\", advertise_internal: \"http://127.0.0.1:8081\"}"), "listen.ops"},
		{"limits", edit(9, "limits: {read_header_timeout: 5s, max_header_bytes: 1KiB, idle_timeout: 1s, max_connections: 10}"), "limits.read_header_timeout limits.max_header_bytes limits.idle_timeout limits.max_connections"},
		{"log", edit(9, "log: {level: debug, format: text, access: false}"), "log.level log.format log.access"},
		{"registry", edit(5, "registry: {redis: {addr: \"127.0.0.1:6379\"}, ttl: 1m}"), "registry"},
		{"internal secret", edit(4, "internal: {secret_file: other.key}"), "internal.secret_file"},
		{"internal peers", edit(4, "internal: {secret_file: internal.key, peers: [10.0.0.0/8]}"), "internal.peers"},
		{"shutdown", edit(9, "shutdown: {grace: 1s}"), "shutdown.grace"},
		{"cell range", edit(3, `  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-11"]}`), "cells"},
		{"cell preserve_host", edit(3, `  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-10"], preserve_host: false}`), "cells"},
		{"routing", edit(8, "routing: {trusted_proxies: [10.0.0.1], long_poll_timeout: 30s}"), "routing"},
		{"tokens", edit(9, "tokens: {job_jwt: {verify: false}}"), "tokens"},
		{"agents", edit(6, "agents: {keys: [{alg: HS256, file: agent.key}], wait: 1s}"), "agents"},
		{"agents key", edit(6, "agents: {keys: [{alg: HS256, file: other.key}]}"), "agents"},
		{"agents max_connections", edit(6, "agents: {keys: [{alg: HS256, file: agent.key}], max_connections: 3}"), "agents"},
		{"agents max_connections default written out", edit(6, "agents: {keys: [{alg: HS256, file: agent.key}], max_connections: 10}"), ""},
		{"gitlab_api absent", edit(7, "# none"), "gitlab_api"},
	}
	old := mustParse(t, dir, lines(base...))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := mustParse(t, dir, lines(tt.src...))
			if got := strings.Join(Diff(old, next), " "); got != tt.want {
				t.Errorf("Diff: got %q, want %q", got, tt.want)
			}
			if got := strings.Join(Diff(next, old), " "); got != tt.want {
				t.Errorf("Diff reversed: got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		if got, want := len(Diff(nil, old)), len(diffSettings()); got != want {
			t.Errorf("Diff(nil, c): got %d names, want %d", got, want)
		}
	})
}
