package config

import (
	"crypto/elliptic"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// cellsOnly is a config with listen and cells and nothing else.
func cellsOnly(extra ...string) []string {
	return append([]string{
		"listen: {public: \":8080\", ops: \"127.0.0.1:9090\"}", // 1
		"cells:", // 2
		`  - {id: 1, url: "http://127.0.0.1:3001", legacy: true}`, // 3
	}, extra...)
}

func TestJobJWTSection(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwt.pub", publicPEM(t, &newECKey(t, elliptic.P256()).PublicKey))
	tests := []struct {
		name                string
		src                 []string
		enabled, wantVerify bool
	}{
		{"absent: the rule is off", cellsOnly(), false, false},
		{"tokens without job_jwt: off", cellsOnly("tokens: {cache_size: 10}"), false, false},
		{"present, verify false: unverified claims", cellsOnly("tokens: {job_jwt: {verify: false}}"), true, false},
		{"present with keys: verified", cellsOnly("tokens:", "  job_jwt:", "    keys: [{kid: k1, alg: ES256, file: jwt.pub}]"), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, dir, lines(tt.src...))
			if got := c.Tokens.JobJWT.Enabled; got != tt.enabled {
				t.Errorf("enabled: got %v, want %v", got, tt.enabled)
			}
			if got := c.Tokens.JobJWT.Verify; got != tt.wantVerify {
				t.Errorf("verify: got %v, want %v", got, tt.wantVerify)
			}
		})
	}
	t.Run("present without keys is refused", func(t *testing.T) {
		for _, tt := range []struct {
			src  []string
			line int
		}{
			{cellsOnly("tokens:", "  job_jwt:"), 5},
			{cellsOnly("tokens: {job_jwt: {}}"), 4},
			{cellsOnly("tokens: {job_jwt: {verify: true}}"), 4},
		} {
			_, ps := parse(t, dir, lines(tt.src...))
			p, ok := find(ps, "tokens.job_jwt.verify")
			if !ok || p.Line != tt.line || !strings.Contains(p.Message, "verify is true but no keys") {
				t.Errorf("%q: got %v, want the no-keys problem at line %d", tt.src[3:], ps, tt.line)
			}
		}
	})
	t.Run("code-built config has the rule on", func(t *testing.T) {
		if j := Default().Tokens.JobJWT; !j.Enabled || !j.Verify {
			t.Errorf("Default: got enabled %v verify %v, want both true", j.Enabled, j.Verify)
		}
	})
}

func TestRegistryRefreshDefault(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "internal.key", secret32)
	base := cellsOnly(
		"internal: {secret_file: internal.key}",
		"registry:",
		"  redis: {addr: \"127.0.0.1:6379\"}",
	)
	base[0] = "listen: {internal: \"127.0.0.1:8081\", advertise_internal: \"http://127.0.0.1:8081\"}"
	tests := []struct {
		name    string
		extra   []string
		ttl     time.Duration
		refresh time.Duration
		problem string
	}{
		{"neither", nil, 5 * time.Minute, 4 * time.Minute, ""},
		{"ttl alone", []string{"  ttl: 5s"}, 5 * time.Second, 4 * time.Second, ""},
		{"ttl alone, not a multiple of 5", []string{"  ttl: 1s"}, time.Second, 800 * time.Millisecond, ""},
		{"both", []string{"  ttl: 5s", "  refresh: 2s"}, 5 * time.Second, 2 * time.Second, ""},
		{"refresh alone, below the default ttl", []string{"  refresh: 1m"}, 5 * time.Minute, time.Minute, ""},
		{"refresh not below ttl", []string{"  ttl: 5s", "  refresh: 5s"}, 0, 0, "must be less than registry.ttl (5s)"},
		{"refresh above ttl", []string{"  ttl: 5s", "  refresh: 4m"}, 0, 0, "must be less than registry.ttl (5s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ps := parse(t, dir, lines(append(base, tt.extra...)...))
			if tt.problem != "" {
				if p, ok := find(ps, "registry.refresh"); !ok || !strings.Contains(p.Message, tt.problem) {
					t.Errorf("problems: got %v, want registry.refresh: %s", ps, tt.problem)
				}
				return
			}
			if ps != nil {
				t.Fatalf("Parse: unexpected problems:\n%v", ps)
			}
			if got := c.Registry.TTL.Duration; got != tt.ttl {
				t.Errorf("ttl: got %v, want %v", got, tt.ttl)
			}
			if got := c.Registry.Refresh.Duration; got != tt.refresh {
				t.Errorf("refresh: got %v, want %v", got, tt.refresh)
			}
		})
	}
}

func TestPeers(t *testing.T) {
	pfx := netip.MustParsePrefix
	tests := []struct {
		name  string
		peers string // YAML of internal.peers; "" leaves it out
		want  []netip.Prefix
		path  string // of the problem, when one is wanted
		msg   string
	}{
		{"default", "", []netip.Prefix{pfx("127.0.0.0/8"), pfx("::1/128"), pfx("10.0.0.0/8"), pfx("172.16.0.0/12"), pfx("192.168.0.0/16"), pfx("fc00::/7")}, "", ""},
		{"cidrs and bare ips", `["10.1.2.0/24", "10.9.9.9", "fd00::1", "10.1.2.3/16"]`, []netip.Prefix{pfx("10.1.2.0/24"), pfx("10.9.9.9/32"), pfx("fd00::1/128"), pfx("10.1.0.0/16")}, "", ""},
		{"ipv4-mapped is written as ipv4", `["::ffff:10.0.0.0/104"]`, []netip.Prefix{pfx("10.0.0.0/8")}, "", ""},
		{"bad cidr", `["10.0.0.0/8", "10.0.0.0/33"]`, nil, "internal.peers[1]", `"10.0.0.0/33" is not a CIDR`},
		{"not an address", `[edge-2]`, nil, "internal.peers[0]", "is not a CIDR"},
		{"empty list", `[]`, nil, "internal.peers", "an empty list would refuse every holder"},
		{"link-local v4", `["169.254.0.0/16"]`, nil, "internal.peers[0]", "link-local addresses are never peers (cloud metadata endpoints live there)"},
		{"metadata address", `["169.254.169.254"]`, nil, "internal.peers[0]", "overlaps 169.254.0.0/16"},
		{"covering link-local", `["169.0.0.0/8"]`, nil, "internal.peers[0]", "link-local addresses are never peers"},
		{"all of ipv4", `["0.0.0.0/0"]`, nil, "internal.peers[0]", "link-local addresses are never peers"},
		{"all of ipv6", `["::/0"]`, nil, "internal.peers[0]", "overlaps fe80::/10"},
		{"link-local v6", `["fe80::1"]`, nil, "internal.peers[0]", "overlaps fe80::/10"},
		{"ipv4-mapped link-local", `["::ffff:169.254.169.254"]`, nil, "internal.peers[0]", "overlaps 169.254.0.0/16"},
		{"all of ipv4-mapped", `["::ffff:0:0/96"]`, nil, "internal.peers[0]", "link-local addresses are never peers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := cellsOnly()
			if tt.peers != "" {
				src = append(src, "internal:", "  peers: "+tt.peers)
			}
			c, ps := parse(t, "", lines(src...))
			if tt.path != "" {
				p, ok := find(ps, tt.path)
				if !ok || !strings.Contains(p.Message, tt.msg) || p.Line != 5 {
					t.Errorf("problems: got %v, want %s at line 5: %s", ps, tt.path, tt.msg)
				}
				return
			}
			if ps != nil {
				t.Fatalf("Parse: unexpected problems:\n%v", ps)
			}
			if got := c.Internal.PeerPrefixes; !slices.Equal(got, tt.want) {
				t.Errorf("peer prefixes: got %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("code-built config gets the defaults", func(t *testing.T) {
		c := Default()
		c.Tokens.JobJWT.Enabled = false
		c.Cells = []Cell{{ID: 1, URL: "http://127.0.0.1:3001", Legacy: true}}
		if err := c.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		if got, want := len(c.Internal.PeerPrefixes), len(DefaultPeers()); got != want {
			t.Errorf("peer prefixes: got %d, want %d", got, want)
		}
	})
}

func TestPreserveHostAndAccessLog(t *testing.T) {
	tests := []struct {
		name              string
		src               []string
		keepsHost, access bool
	}{
		{"defaults", cellsOnly(), true, true},
		{"preserve_host false", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true, preserve_host: false}`}, false, true},
		{"preserve_host true", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true, preserve_host: true}`}, true, true},
		{"access false", cellsOnly("log: {access: false}"), true, false},
		{"access true", cellsOnly("log: {access: true}"), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, "", lines(tt.src...))
			if got := c.Cells[0].KeepsHost(); got != tt.keepsHost {
				t.Errorf("KeepsHost: got %v, want %v", got, tt.keepsHost)
			}
			if got := c.Log.AccessLog(); got != tt.access {
				t.Errorf("AccessLog: got %v, want %v", got, tt.access)
			}
		})
	}
	for _, src := range [][]string{
		{"cells:", `  - {id: 1, url: "http://a", legacy: true, preserve_host: "no"}`},
		{"log: {access: 1}", "cells:", `  - {id: 1, url: "http://a", legacy: true}`},
	} {
		_, ps := parse(t, "", lines(src...))
		if len(ps) != 1 || !strings.Contains(ps[0].Message, "must be true or false") {
			t.Errorf("%q: got %v, want one problem: must be true or false", src, ps)
		}
	}
}
