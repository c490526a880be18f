package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gitlab.com/edge/edge/config"
)

// TestReloadVerdict holds the modules' reload rules: which changes a reload names, and which of
// those need a restart. Settings are compared by what they mean, not how they are written.
func TestReloadVerdict(t *testing.T) {
	dir := t.TempDir()
	const secret = "0123456789abcdef0123456789abcdef"
	for name, content := range map[string]string{"internal.key": secret, "moved.key": secret, "gitlab.key": secret,
		"other.key": secret + "x", "agent.key": secret + "agent"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{
		"listen: {public: \"127.0.0.1:8080\", ops: \"127.0.0.1:9090\", internal: \"127.0.0.1:8081\", advertise_internal: \"http://127.0.0.1:8081\"}", // 1
		"cells:", // 2
		`  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-10"]}`, // 3
		"internal: {secret_file: internal.key}",                                        // 4
		"registry: {redis: {addr: \"127.0.0.1:6379\"}}",                                // 5
		"agents: {keys: [{alg: HS256, file: agent.key}]}",                              // 6
		"gitlab_api: {secret_file: gitlab.key}",                                        // 7
		"routing: {trusted_proxies: [10.0.0.1]}",                                       // 8
	}
	load := func(src []string) *config.Config {
		t.Helper()
		path := filepath.Join(dir, "edge.yaml")
		if err := os.WriteFile(path, []byte(strings.Join(src, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(src, "\n"), err)
		}
		return cfg
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
		name             string
		src              []string
		changed, restart string
	}{
		{"same", base, "", ""},
		{"spelt differently", edit(8, "routing: {trusted_proxies: [10.0.0.1/32]}"), "", ""},
		{"secret file moved, same secret", edit(4, "internal: {secret_file: moved.key}"), "", ""},
		{"default written out", edit(9, "log: {access: true, level: info}"), "", ""},
		{"preserve_host true written out", edit(3, `  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-10"], preserve_host: true}`), "", ""},
		{"peers reordered", edit(4, "internal: {secret_file: internal.key, peers: [192.168.0.0/16, 10.0.0.0/8, 127.0.0.0/8, \"::1\", 172.16.0.0/12, \"fc00::/7\"]}"), "", ""},
		{"listeners", edit(1, "listen: {public: \"127.0.0.1:8082\", ops: \"127.0.0.1:9091\", internal: \"127.0.0.1:8083\", advertise_internal: \"http://127.0.0.1:8083\"}"),
			"listen.public listen.internal listen.advertise_internal listen.ops", "listen.public listen.internal listen.advertise_internal listen.ops"},
		{"limits", edit(9, "limits: {read_header_timeout: 5s, max_header_bytes: 1KiB, idle_timeout: 1s, max_connections: 10}"),
			"limits.read_header_timeout limits.max_header_bytes limits.idle_timeout limits.max_connections", "limits.read_header_timeout limits.max_header_bytes limits.idle_timeout limits.max_connections"},
		{"log", edit(9, "log: {level: debug, format: text, access: false}"), "log.level log.format log.access", "log.level log.format"},
		{"registry", edit(5, "registry: {redis: {addr: \"127.0.0.1:6379\"}, ttl: 1m}"), "registry", "registry"},
		{"internal secret", edit(4, "internal: {secret_file: other.key}"), "internal.secret_file", "internal.secret_file"},
		{"internal peers", edit(4, "internal: {secret_file: internal.key, peers: [10.0.0.0/8]}"), "internal.peers", "internal.peers"},
		{"shutdown", edit(9, "shutdown: {grace: 1s}"), "shutdown.grace", ""},
		{"admission added", edit(9, "runners: {admission: {controllers: [{name: p, url: \"http://127.0.0.1:7070/admit\", secret_file: internal.key}]}}"), "runners", ""},
		{"admission mode", edit(9, "runners: {admission: {mode: dry_run, controllers: [{name: p, url: \"http://127.0.0.1:7070/admit\"}]}}"), "runners", ""},
		{"cell range", edit(3, `  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-11"]}`), "cells", ""},
		{"cell preserve_host", edit(3, `  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-10"], preserve_host: false}`), "cells", ""},
		{"routing", edit(8, "routing: {trusted_proxies: [10.0.0.1], long_poll_timeout: 30s}"), "routing", ""},
		{"tokens", edit(9, "tokens: {job_jwt: {verify: false}}"), "tokens", ""},
		{"agents wait", edit(6, "agents: {keys: [{alg: HS256, file: agent.key}], wait: 1s}"), "agents.wait", "agents.wait"},
		{"agents key", edit(6, "agents: {keys: [{alg: HS256, file: other.key}]}"), "agents", ""},
		{"agents max_connections", edit(6, "agents: {keys: [{alg: HS256, file: agent.key}], max_connections: 3}"), "agents", ""},
		{"agents max_connections default written out", edit(6, "agents: {keys: [{alg: HS256, file: agent.key}], max_connections: 10}"), "", ""},
		{"gitlab_api absent", edit(7, "# none"), "gitlab_api", ""},
		{"aggregation on", edit(9, "aggregation: {auth: {tokens_file: gitlab.key}, clusters: [{name: a, server: \"https://127.0.0.1:6443\", token_file: gitlab.key, insecure_skip_verify: true}]}"), "aggregation", "aggregation"},
	}
	old := load(base)
	e := buildFile(t, filepath.Join(dir, "edge.yaml"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := load(tt.src)
			for _, pair := range [][2]*config.Config{{old, next}, {next, old}} {
				changed, restart := verdict(e.modules, pair[0], pair[1])
				if got := strings.Join(changed, " "); got != tt.changed {
					t.Errorf("changed: got %q, want %q", got, tt.changed)
				}
				if got := strings.Join(restart, " "); got != tt.restart {
					t.Errorf("needs a restart: got %q, want %q", got, tt.restart)
				}
			}
		})
	}
}

// Every setting is one module's: a name owned twice would be warned about twice, or applied by
// one module and refused by another.
func TestSettingsOwnedOnce(t *testing.T) {
	e := buildFile(t, "../examples/edge.yaml")
	owner := map[string]string{}
	for _, m := range e.modules {
		for _, s := range m.settings {
			if o, ok := owner[s.name]; ok {
				t.Errorf("%s is owned by %s and %s", s.name, o, m.name)
			}
			owner[s.name] = m.name
		}
	}
}
