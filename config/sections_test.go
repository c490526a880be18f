package config

import (
	"crypto/elliptic"
	"strings"
	"testing"
)

// sectionDir holds the files the section cases name.
func sectionDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"internal.key", "gitlab.key", "session.key", "authz.key"} {
		writeFile(t, dir, name, secret32)
	}
	writeFile(t, dir, "short.key", "short")
	writeFile(t, dir, "oidc", "client-secret")
	writeFile(t, dir, "ws.yaml", "workspaces: []\n")
	writeFile(t, dir, "tokens.csv", "tok,alice,1\n")
	writeFile(t, dir, "c.token", "tok\n")
	key := newECKey(t, elliptic.P256())
	cert := selfSigned(t, key)
	writeFile(t, dir, "tls.crt", cert)
	writeFile(t, dir, "tls.key", privatePEM(t, key))
	writeFile(t, dir, "other.key", privatePEM(t, newECKey(t, elliptic.P256())))
	writeFile(t, dir, "ca.pem", cert)
	return dir
}

// wsLines is a workspaces section for lines 4 to 9, valid as it is.
func wsLines() []string {
	return []string{
		"workspaces:",                      // 4
		"  domain: workspaces.example.com", // 5
		`  oidc: {issuer: "https://gitlab.example.com", client_id: abc, client_secret_file: oidc, redirect_url: "https://auth.workspaces.example.com/oauth/callback"}`, // 6
		"  authorizer:",                      // 7
		"    file: ws.yaml",                  // 8
		"  session: {key_file: session.key}", // 9
	}
}

func TestSections(t *testing.T) {
	dir := sectionDir(t)
	ws := func(replace map[int]string, extra ...string) []string {
		ls := with(wsLines()...)
		for i, l := range replace {
			ls[i-1] = l
		}
		return append(ls, extra...)
	}
	tests := []struct {
		name string
		src  []string
		path string
		line int
		msg  string
	}{
		{"registry needs internal secret", with("registry:", "  redis: {addr: \"127.0.0.1:6379\"}"), "internal.secret_file", 4, "required when registry is set"},
		{"registry needs listen.internal", with("registry:", "  redis: {addr: \"127.0.0.1:6379\"}"), "listen.internal", 4, "required when registry is set"},
		{"registry needs advertise", with("listen: {public: \":80\"}", "registry:", "  redis: {addr: \"127.0.0.1:6379\"}"), "listen.advertise_internal", 4, "required when registry is set"},
		{"registry needs addr", with("registry:", "  ttl: 5m"), "registry.redis.addr", 4, "required"},
		{"registry addr and addrs", with("registry:", "  redis:", "    addr: \"a:1\"", "    addrs: [\"b:1\"]"), "registry.redis.addrs", 7, "not both"},
		{"registry bad addr", with("registry:", "  redis:", "    addr: redis"), "registry.redis.addr", 6, "must be host:port"},
		{"registry refresh not below ttl", with("registry:", "  ttl: 1m", "  refresh: 1m"), "registry.refresh", 6, "must be less than registry.ttl (1m0s)"},
		{"registry unknown field", with("registry:", "  redis:", "    adr: x"), "registry.redis.adr", 6, "unknown field (did you mean addr?)"},
		{"registry not a mapping", with("registry: redis://x"), "registry", 4, "must be a mapping"},
		{"internal secret short", with("internal:", "  secret_file: short.key"), "internal.secret_file", 5, "at least 32 bytes"},

		{"gitlab_api needs secret", with("gitlab_api: {issuer: gl}"), "gitlab_api.secret_file", 4, "required: the HS256 secret"},
		{"gitlab_api short secret", with("gitlab_api:", "  secret_file: short.key"), "gitlab_api.secret_file", 5, "at least 32 bytes"},
		{"agents wait", with("agents: {wait: 0s}"), "agents.wait", 4, "must be positive"},
		{"agents leeway", with("agents: {leeway: -1s}"), "agents.leeway", 4, "must not be negative"},
		{"agents max_connections zero", with("agents: {max_connections: 0}"), "agents.max_connections", 4, "must be at least 1"},
		{"agents max_connections negative", with("agents:", "  max_connections: -3"), "agents.max_connections", 5, "must be at least 1"},
		{"agents max_connections not int", with("agents: {max_connections: many}"), "agents.max_connections", 4, "must be an integer"},

		{"workspaces domain", ws(map[int]string{5: "  insecure_http: true"}), "workspaces.domain", 4, "required"},
		{"workspaces domain bad", ws(map[int]string{5: "  domain: https://ws.example.com"}), "workspaces.domain", 5, "is not a host name"},
		{"workspaces oidc absent", ws(map[int]string{6: "  insecure_http: false"}), "workspaces.oidc.issuer", 4, "required"},
		{"workspaces oidc issuer", ws(map[int]string{6: "  oidc: {client_id: abc, client_secret_file: oidc, redirect_url: \"https://a/oauth/callback\"}"}), "workspaces.oidc.issuer", 6, "required"},
		{"workspaces oidc client_id", ws(map[int]string{6: "  oidc: {issuer: \"https://g\", client_secret_file: oidc, redirect_url: \"https://a/oauth/callback\"}"}), "workspaces.oidc.client_id", 6, "required"},
		{"workspaces oidc client secret", ws(map[int]string{6: "  oidc: {issuer: \"https://g\", client_id: abc, redirect_url: \"https://a/oauth/callback\"}"}), "workspaces.oidc.client_secret_file", 6, "required"},
		{"workspaces oidc redirect", ws(map[int]string{6: "  oidc: {issuer: \"https://g\", client_id: abc, client_secret_file: oidc}"}), "workspaces.oidc.redirect_url", 6, "required"},
		{"workspaces redirect http", ws(map[int]string{6: "  oidc: {issuer: \"https://g\", client_id: abc, client_secret_file: oidc, redirect_url: \"http://a/oauth/callback\"}"}), "workspaces.oidc.redirect_url", 6, "must be https (unless insecure_http: true)"},
		{"workspaces scopes", ws(map[int]string{6: "  oidc: {issuer: \"https://g\", client_id: abc, client_secret_file: oidc, redirect_url: \"https://a/oauth/callback\", scopes: [profile]}"}), "workspaces.oidc.scopes", 6, "must include openid"},
		{"workspaces duplicate key", ws(nil, "  oidc: {scopes: [profile]}"), "", 10, "workspaces.oidc: duplicate key (first at line 6)"},
		{"workspaces authorizer absent", ws(map[int]string{7: "  insecure_http: false", 8: "  domain_x: 1"}), "workspaces.authorizer", 4, "required: url (with secret_file)"},
		{"workspaces authorizer both", ws(map[int]string{8: "    {url: \"https://g/authorize\", secret_file: authz.key, file: ws.yaml}"}), "workspaces.authorizer.file", 8, "set url or file, not both"},
		{"workspaces authorizer url without secret", ws(map[int]string{8: "    url: \"https://g/authorize\""}), "workspaces.authorizer.secret_file", 7, "required: the HS256 secret"},
		{"workspaces authorizer file missing", ws(map[int]string{8: "    file: none.yaml"}), "workspaces.authorizer.file", 8, "does not exist"},
		{"workspaces session key", ws(map[int]string{9: "  session: {ttl: 1h}"}), "workspaces.session.key_file", 9, "required: the key session cookies"},
		{"workspaces session key short", ws(map[int]string{9: "  session: {key_file: short.key}"}), "workspaces.session.key_file", 9, "at least 32 bytes"},

		{"aggregation auth", with("aggregation:", "  clusters: [{name: c1, server: \"https://a\", token_file: c.token}]"), "aggregation.auth", 4, "required: tokens_file or keys"},
		{"aggregation clusters", with("aggregation:", "  auth: {tokens_file: tokens.csv}"), "aggregation.clusters", 4, "at least one member cluster"},
		{"aggregation prefix", with("aggregation:", "  prefix: k8s/"), "aggregation.prefix", 5, "clean absolute path"},
		{"aggregation prefix api", with("aggregation:", "  prefix: /api/k8s"), "aggregation.prefix", 5, "must not be under /api or /-"},
		{"aggregation member_down", with("aggregation:", "  member_down: ignore"), "aggregation.member_down", 5, `must be "fail" or "partial"`},
		{"aggregation cluster names", with("aggregation:", "  clusters:", "    - {name: c1, server: \"https://a\", token_file: c.token}", "    - {name: c1, server: \"https://b\", token_file: c.token}"), "aggregation.clusters[1].name", 7, `duplicate name "c1" (also aggregation.clusters[0])`},
		{"aggregation cluster server", with("aggregation:", "  clusters:", "    - name: c1", "      server: a:6443"), "aggregation.clusters[0].server", 7, "absolute http(s) URL"},
		{"aggregation cluster token", with("aggregation:", "  clusters:", "    - {name: c1, server: \"https://a\"}"), "aggregation.clusters[0].token_file", 6, "required"},
		{"aggregation cluster ca", with("aggregation:", "  clusters:", "    - {name: c1, server: \"https://a\", token_file: c.token, ca_file: tokens.csv}"), "aggregation.clusters[0].ca_file", 6, "holds no PEM certificate"},
		{"aggregation ca and insecure", with("aggregation:", "  clusters:", "    - {name: c1, server: \"https://a\", token_file: c.token, ca_file: ca.pem, insecure_skip_verify: true}"), "aggregation.clusters[0].insecure_skip_verify", 6, "not both"},

		{"tls neither", with("tls: {redirect_http: \":80\"}"), "tls", 4, "set tls.static"},
		{"tls both", with("tls:", "  static: {cert_file: tls.crt, key_file: tls.key}", "  acme: {domains: [edge.example.com]}"), "tls.acme", 6, "not both"},
		{"tls static key missing", with("tls:", "  static: {cert_file: tls.crt}"), "tls.static.key_file", 5, "required"},
		{"tls static mismatch", with("tls:", "  static: {cert_file: tls.crt, key_file: other.key}"), "tls.static.key_file", 5, "do not make a pair"},
		{"tls acme domains", with("tls:", "  acme: {email: ops@example.com}"), "tls.acme.domains", 5, "required"},
		{"tls acme bad domain", with("tls:", "  acme:", "    domains: [edge.example.com, \"https://x\"]"), "tls.acme.domains[1]", 6, "is not a host name"},
		{"tls acme on demand", with("tls:", "  acme:", "    on_demand_workspaces: true"), "tls.acme.on_demand_workspaces", 6, "needs a workspaces section"},
		{"tls acme ca root", with("tls:", "  acme:", "    domains: [a.example.com]", "    ca_root: tokens.csv"), "tls.acme.ca_root", 7, "holds no PEM certificate"},
		{"tls redirect same as public", with("listen: {public: \":8443\"}", "tls:", "  static: {cert_file: tls.crt, key_file: tls.key}", "  redirect_http: \":8443\""), "tls.redirect_http", 7, "same address as listen.public"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := parse(t, dir, lines(tt.src...))
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

func TestValidSections(t *testing.T) {
	dir := sectionDir(t)
	tests := []struct {
		name string
		src  []string
	}{
		{"workspaces static authorizer", with(wsLines()...)},
		{"workspaces http authorizer", with(append(wsLines()[:4:4], "    url: \"https://g/authorize\"", "    secret_file: authz.key", wsLines()[5])...)},
		{"registry with sentinel", with(
			"listen: {internal: \"127.0.0.1:8081\", advertise_internal: \"http://10.0.0.5:8081\"}",
			"internal: {secret_file: internal.key}",
			"registry:",
			"  redis: {addrs: [\"10.0.0.1:26379\", \"10.0.0.2:26379\"], master_name: mymaster, db: 2, username: edge}",
			"  ttl: 2m",
			"  refresh: 90s",
		)},
		{"gitlab api and agents", with("gitlab_api: {secret_file: gitlab.key}", "agents:", "  keys: [{alg: HS256, file: gitlab.key}]", "  wait: 5s")},
		{"aggregation", with("aggregation:", "  prefix: /clusters/k8s", "  member_down: partial", "  auth: {tokens_file: tokens.csv}",
			"  clusters:", "    - {name: c1, server: \"https://127.0.0.1:6441\", token_file: c.token, ca_file: ca.pem}",
			"    - {name: c2, server: \"https://127.0.0.1:6442\", token_file: c.token, insecure_skip_verify: true}")},
		{"tls static", with("tls:", "  static: {cert_file: tls.crt, key_file: tls.key}", "  redirect_http: \":8081\"")},
		{"tls acme on demand", append(with(wsLines()...), "tls:", "  acme: {ca: \"https://127.0.0.1:14000/dir\", ca_root: ca.pem, on_demand_workspaces: true, storage: certs}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustParse(t, dir, lines(tt.src...))
		})
	}
}

func TestACMEPaths(t *testing.T) {
	dir := sectionDir(t)
	c := mustParse(t, dir, lines(with("tls:", "  acme: {domains: [edge.example.com], ca_root: ca.pem, storage: var/certs}")...))
	tests := []struct{ name, got, want string }{
		{"storage", c.TLS.ACME.Storage, dir + "/var/certs"},
		{"ca_root", c.TLS.ACME.CARoot, dir + "/ca.pem"},
		{"ca default", c.TLS.ACME.CA, LetsEncrypt},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if len(c.TLS.ACME.CARootPEM) == 0 {
		t.Errorf("ca_root: not read")
	}
}

// TestUnservedSections: tls, workspaces and aggregation are parsed and checked, but refused
// until this edge serves them, at the section's line, along with their own problems.
