package config

import (
	"strings"
	"testing"
)

// base is a valid config of three lines; cases add lines (more cells, or other sections) from
// line 4 on.
func baseLines() []string {
	return []string{
		"tokens: {job_jwt: {verify: false}}", // 1
		"cells:",                             // 2
		`  - {id: 1, url: "http://127.0.0.1:3001", legacy: true}`, // 3
	}
}

func with(extra ...string) []string { return append(baseLines(), extra...) }

func TestProblems(t *testing.T) {
	tests := []struct {
		name string
		src  []string
		path string
		line int
		msg  string
	}{
		{"empty file", []string{""}, "cells", 0, "no cells configured"},
		{"only comments", []string{"# nothing", "  # here"}, "cells", 0, "no cells configured"},
		{"cells empty list", []string{"cells: []"}, "cells", 1, "no cells configured"},
		{"cells not a list", []string{"cells: {id: 1}"}, "cells", 1, "must be a list"},
		{"unknown top-level field", with("cels: []"), "cels", 4, "unknown field (did you mean cells?)"},
		{"unknown nested field", with("listen:", `  publik: ":80"`), "listen.publik", 5, "unknown field (did you mean public?)"},
		{"unknown cell field", []string{"cells:", "  - id: 1", `    url: "http://a"`, "    legacy: true", "    region: eu"}, "cells[0].region", 5, "unknown field"},
		{"derived field is not a key", []string{"cells:", "  - id: 1", `    url: "http://a"`, "    legacy: true", "    ranges: []"}, "cells[0].ranges", 5, "unknown field"},
		{"duplicate key", with("log: {level: info}", "log: {level: debug}"), "", 5, "log: duplicate key (first at line 4)"},
		{"yaml syntax", with("listen: x: y"), "", 4, "mapping values are not allowed"},
		{"two documents", with("---", "cells: []"), "", 4, "second YAML document"},
		{"top level not a mapping", []string{"- a"}, "", 1, "must be a mapping"},

		{"cell id missing", []string{"cells:", `  - {url: "http://a", legacy: true}`}, "cells[0].id", 2, "required: a positive integer"},
		{"cell id zero", []string{"cells:", `  - {id: 0, url: "http://a", legacy: true}`}, "cells[0].id", 2, "required: a positive integer"},
		{"cell id not a number", []string{"cells:", `  - {id: one, url: "http://a", legacy: true}`}, "cells[0].id", 2, "must be a non-negative integer"},
		{"cell id negative", []string{"cells:", `  - {id: -3, url: "http://a", legacy: true}`}, "cells[0].id", 2, "must be a non-negative integer"},
		{"duplicate cell id", with(`  - {id: 1, url: "http://127.0.0.1:3002"}`), "cells[1].id", 4, "duplicate cell id 1 (also cells[0])"},
		{"duplicate url", with(`  - {id: 2, url: "HTTP://127.0.0.1:3001/"}`), "cells[1].url", 4, "same URL as cells[0]"},
		{"duplicate url default port", with(`  - {id: 2, url: "http://127.0.0.1:80"}`, `  - {id: 3, url: "http://127.0.0.1"}`), "cells[2].url", 5, "same URL as cells[1]"},
		{"cell url missing", []string{"cells:", "  - id: 1", "    legacy: true"}, "cells[0].url", 2, "required: an absolute http(s) URL"},
		{"cell url relative", []string{"cells:", "  - id: 1", "    url: 127.0.0.1:3001", "    legacy: true"}, "cells[0].url", 3, "must be an absolute http(s) URL"},
		{"cell url ftp", []string{"cells:", "  - id: 1", "    url: ftp://a", "    legacy: true"}, "cells[0].url", 3, "must be an absolute http(s) URL"},
		{"cell url query", []string{"cells:", "  - id: 1", "    url: http://a/?x=1", "    legacy: true"}, "cells[0].url", 3, "no query or fragment"},
		{"cell url credentials", []string{"cells:", "  - id: 1", "    url: http://u:p@a/", "    legacy: true"}, "cells[0].url", 3, "must not hold credentials"},
		{"no legacy cell", []string{"# cells", "cells:", `  - {id: 1, url: "http://a"}`}, "cells", 2, "no cell has legacy: true"},
		{"two legacy cells", with(`  - {id: 2, url: "http://b", legacy: true}`), "cells[1].legacy", 4, "cells[0] is the legacy cell already"},
		{"legacy not a bool", []string{"cells:", `  - {id: 1, url: "http://a", legacy: "yes"}`}, "cells[0].legacy", 2, "must be true or false"},
		{"id range form", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true, id_ranges: ["1..5"]}`}, "cells[0].id_ranges[0]", 2, `"1..5" must be "lo-hi"`},
		{"id range hex", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true, id_ranges: ["0x1-0x5"]}`}, "cells[0].id_ranges[0]", 2, "decimal"},
		{"id range reversed", []string{"cells:", "  - id: 1", "    url: http://a", "    legacy: true", "    id_ranges:", `      - "1-5"`, `      - "9-7"`}, "cells[0].id_ranges[1]", 7, "9 is greater than 7"},

		{"url and urls", []string{"cells:", `  - {id: 1, url: "http://a", urls: ["http://b"], legacy: true}`}, "cells[0].urls", 2, "set url or urls, not both"},
		{"urls relative", []string{"cells:", `  - {id: 1, urls: ["http://a", "b:1"], legacy: true}`}, "cells[0].urls[1]", 2, "must be an absolute http(s) URL"},
		{"urls paths differ", []string{"cells:", `  - {id: 1, urls: ["http://a/x", "http://b/y"], legacy: true}`}, "cells[0].urls[1]", 2, `path "/y" differs from "/x"`},
		{"urls twice", []string{"cells:", `  - {id: 1, urls: ["http://a", "HTTP://a:80/"], legacy: true}`}, "cells[0].urls", 2, "listed twice"},
		{"urls of another cell", with(`  - {id: 2, urls: ["http://b", "http://127.0.0.1:3001"]}`), "cells[1].url", 4, "same URL as cells[0]"},
		{"health timeout over interval", with("health: {interval: 1s, timeout: 2s}"), "health.timeout", 4, "must not be longer than the interval"},
		{"health path relative", with("health: {path: readiness}"), "health.path", 4, "must be an absolute path"},
		{"cell health over block", with(`  - {id: 2, url: "http://b", health: {timeout: 11s}}`, "health: {interval: 10s}"), "cells[1].health.timeout", 4, "must not be longer than the interval (10s)"},
		{"health negative", with("health: {healthy_after: -1}"), "health.healthy_after", 4, "must be at least 1"},

		{"tracing endpoint", with("tracing: {otlp_endpoint: 127.0.0.1:4318}"), "tracing.otlp_endpoint", 4, "http(s)://host:port"},
		{"tracing protocol", with(`tracing: {otlp_endpoint: "http://c:4318", protocol: thrift}`), "tracing.protocol", 4, "must be http/protobuf or grpc"},
		{"tracing ratio", with(`tracing: {otlp_endpoint: "http://c:4318", sample_ratio: 2}`), "tracing.sample_ratio", 4, "between 0 and 1"},

		{"listen public bad", with("listen:", `  public: "8080"`), "listen.public", 5, `"8080" must be host:port`},
		{"listen ops bad port", with("listen:", `  ops: "127.0.0.1:99999"`), "listen.ops", 5, "must be host:port"},
		{"listen public empty", with("listen:", `  public: ""`), "listen.public", 5, "required"},
		{"listen same address", with("listen:", `  public: ":9000"`, `  ops: ":9000"`), "listen.ops", 6, "same address as listen.public"},
		{"advertise not a URL", with("listen:", `  advertise_internal: "127.0.0.1:8081"`), "listen.advertise_internal", 5, "absolute http(s) URL"},

		{"classify url bad", with("routing:", "  classify_url: localhost"), "routing.classify_url", 5, "absolute http(s) URL"},
		{"trusted proxy bad", with("routing:", `  trusted_proxies: ["10.0.0.0/8", "10.0.0.0/33"]`), "routing.trusted_proxies[1]", 5, "not a CIDR"},
		{"duration negative", with("routing:", "  long_poll_timeout: -1s"), "routing.long_poll_timeout", 5, "must be positive"},
		{"duration zero", with("limits:", "  idle_timeout: 0s"), "limits.idle_timeout", 5, "must be positive"},
		{"duration without unit", with("routing:", "  dial_timeout: 5"), "routing.dial_timeout", 5, "must be a duration"},
		{"duration list", with("shutdown:", "  grace: [1s]"), "shutdown.grace", 5, "must be a single value"},
		{"byte size bad unit", with("routing:", "  body_token_limit: 32kbit"), "routing.body_token_limit", 5, "must be a size in bytes"},
		{"byte size fraction", with("limits:", "  max_header_bytes: 1.5MiB"), "limits.max_header_bytes", 5, "must be a size in bytes"},
		{"byte size zero", with("limits:", "  max_header_bytes: 0"), "limits.max_header_bytes", 5, "must be positive"},
		{"learned jobs size", with("routing:", "  learned_jobs: {size: 0}"), "routing.learned_jobs.size", 5, "must be positive"},
		{"max connections negative", with("limits:", "  max_connections: -1"), "limits.max_connections", 5, "must not be negative"},
		{"max connections not int", with("limits:", "  max_connections: lots"), "limits.max_connections", 5, "must be an integer"},

		{"on_invalid", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    verify: false", "    on_invalid: drop"}, "tokens.job_jwt.on_invalid", 6, `must be "ignore" or "reject"`},
		{"verify without keys", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    issuer: https://gitlab.example.com"}, "tokens.job_jwt.verify", 4, "verify is true but no keys or jwks_file; set verify: false to route on unverified claims"},
		{"verify without keys explicit", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    verify: true"}, "tokens.job_jwt.verify", 5, "verify is true but no keys"},
		{"verify not a bool", []string{"tokens: {job_jwt: {verify: 1}}", "cells:", `  - {id: 1, url: "http://a", legacy: true}`}, "tokens.job_jwt.verify", 1, "must be true or false"},
		{"key alg unsupported", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    keys: [{kid: k1, alg: HS256, file: k.pem}]"}, "tokens.job_jwt.keys[0].alg", 5, `unsupported alg "HS256": use one of RS256`},
		{"key alg missing", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    keys:", "      - kid: k1", "        file: k.pem"}, "tokens.job_jwt.keys[0].alg", 6, "required: one of"},
		{"key kid missing", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    keys:", "      - alg: RS256", "        file: k.pem"}, "tokens.job_jwt.keys[0].kid", 6, "required"},
		{"key file missing", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    keys:", "      - alg: RS256", "        kid: k1"}, "tokens.job_jwt.keys[0].file", 6, "required"},
		{"key file absent", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    keys:", "      - alg: RS256", "        kid: k1", "        file: keys/none.pem"}, "tokens.job_jwt.keys[0].file", 8, "keys/none.pem does not exist (keys/none.pem is relative to the config file's directory)"},
		{"jwks file absent", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    jwks_file: jwks.json"}, "tokens.job_jwt.jwks_file", 5, "does not exist"},
		{"audience empty", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    verify: false", `    audience: ""`}, "tokens.job_jwt.audience", 6, "must not be empty"},
		{"cache size", with("tokens: {cache_size: 0}"), "", 4, "tokens: duplicate key (first at line 1)"},
		{"cache size zero", []string{"tokens: {job_jwt: {verify: false}, cache_size: 0}", "cells:", `  - {id: 1, url: "http://a", legacy: true}`}, "tokens.cache_size", 1, "must be positive"},

		{"log level", with("log: {level: verbose}"), "log.level", 4, "must be debug, info, warn or error"},
		{"log format", with("log:", "  format: xml"), "log.format", 5, "must be json or text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := parse(t, "", lines(tt.src...))
			p, ok := findMessage(ps, tt.path, tt.msg)
			if !ok {
				t.Fatalf("no problem at %q; got:\n%v", tt.path, ps)
			}
			if p.Line != tt.line {
				t.Errorf("line: got %d, want %d (%v)", p.Line, tt.line, p)
			}
			if !strings.Contains(p.Message, tt.msg) {
				t.Errorf("message: got %q, want it to contain %q", p.Message, tt.msg)
			}
		})
	}
}

// findMessage finds the problem at path whose message contains msg, else (unless path is "", the
// file as a whole) the first problem at path.
func findMessage(ps Problems, path, msg string) (Problem, bool) {
	for _, p := range ps {
		if p.Path == path && strings.Contains(p.Message, msg) {
			return p, true
		}
	}
	for _, p := range ps {
		if p.Path == path && path != "" {
			return p, true
		}
	}
	return Problem{}, false
}
