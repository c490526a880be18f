package config

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c := mustParse(t, "", lines(baseLines()...))
	tests := []struct {
		name      string
		got, want any
	}{
		{"listen.public", c.Listen.Public, ":8080"},
		{"listen.ops", c.Listen.Ops, "127.0.0.1:9090"},
		{"listen.internal", c.Listen.Internal, ""},
		{"listen.advertise_internal", c.Listen.AdvertiseInternal, ""},
		{"tls", c.TLS == nil, true},
		{"routing.classify_url", c.Routing.ClassifyURL, ""},
		{"routing.classify_timeout", c.Routing.ClassifyTimeout.Duration, 2 * time.Second},
		{"routing.body_token_limit", c.Routing.BodyTokenLimit, ByteSize(32 << 10)},
		{"routing.long_poll_timeout", c.Routing.LongPollTimeout.Duration, 65 * time.Second},
		{"routing.upstream_timeout", c.Routing.UpstreamTimeout.Duration, 60 * time.Second},
		{"routing.dial_timeout", c.Routing.DialTimeout.Duration, 5 * time.Second},
		{"routing.trusted_proxies", len(c.Routing.TrustedPrefixes), 0},
		{"routing.learned_jobs.size", c.Routing.LearnedJobs.Size, 100000},
		{"routing.learned_jobs.ttl", c.Routing.LearnedJobs.TTL.Duration, 24 * time.Hour},
		{"limits.read_header_timeout", c.Limits.ReadHeaderTimeout.Duration, 10 * time.Second},
		{"limits.max_header_bytes", c.Limits.MaxHeaderBytes, ByteSize(32 << 10)},
		{"limits.idle_timeout", c.Limits.IdleTimeout.Duration, 120 * time.Second},
		{"limits.max_connections", c.Limits.MaxConnections, 0},
		{"tokens.job_jwt.on_invalid", c.Tokens.JobJWT.OnInvalid, "ignore"},
		{"tokens.job_jwt.audience", c.Tokens.JobJWT.Audience, "gitlab-authz-token"},
		{"tokens.cache_size", c.Tokens.CacheSize, 100000},
		{"registry", c.Registry == nil, true},
		{"agents.wait", c.Agents.Wait.Duration, 20 * time.Second},
		{"agents.leeway", c.Agents.Leeway.Duration, 30 * time.Second},
		{"agents.max_connections", c.Agents.MaxConnections, 10},
		{"gitlab_api", c.GitLabAPI == nil, true},
		{"workspaces", c.Workspaces == nil, true},
		{"aggregation", c.Aggregation == nil, true},
		{"shutdown.grace", c.Shutdown.Grace.Duration, 30 * time.Second},
		{"log.level", c.Log.Level, "info"},
		{"log.format", c.Log.Format, "json"},
		{"file", c.File, "edge.yaml"},
		{"default verify", Default().Tokens.JobJWT.Verify, true},
		{"cells", len(c.Cells), 1},
		{"legacy", c.Cells[0].Legacy, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
			}
		})
	}
}

func TestSectionDefaults(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "internal.key", secret32)
	writeFile(t, dir, "gitlab.key", secret32)
	writeFile(t, dir, "oidc", "s3cret")
	writeFile(t, dir, "session.key", secret32)
	writeFile(t, dir, "ws.yaml", "workspaces: []\n")
	writeFile(t, dir, "tokens.csv", "t,u,1\n")
	writeFile(t, dir, "c1.token", "tok\n")
	c := mustParse(t, dir, lines(append(baseLines(),
		"listen: {internal: \"127.0.0.1:8081\", advertise_internal: \"http://127.0.0.1:8081\"}",
		"internal: {secret_file: internal.key}",
		"registry:",
		"  redis: {addr: \"127.0.0.1:6379\"}",
		"gitlab_api: {secret_file: gitlab.key}",
		"workspaces:",
		"  domain: WS.Example.COM",
		"  oidc: {issuer: \"https://gitlab.example.com\", client_id: abc, client_secret_file: oidc, redirect_url: \"https://auth.ws.example.com/oauth/callback\"}",
		"  authorizer: {file: ws.yaml}",
		"  session: {key_file: session.key}",
		"aggregation:",
		"  auth: {tokens_file: tokens.csv}",
		"  clusters: [{name: c1, server: \"https://127.0.0.1:6441\", token_file: c1.token}]",
	)...))
	tests := []struct {
		name      string
		got, want any
	}{
		{"registry.redis.key_prefix", c.Registry.Redis.KeyPrefix, "edge"},
		{"registry.redis.addresses", strings.Join(c.Registry.Redis.Addresses(), ","), "127.0.0.1:6379"},
		{"registry.ttl", c.Registry.TTL.Duration, 5 * time.Minute},
		{"registry.refresh", c.Registry.Refresh.Duration, 4 * time.Minute},
		{"gitlab_api.issuer", c.GitLabAPI.Issuer, "gitlab"},
		{"gitlab_api.audience", c.GitLabAPI.Audience, "gitlab-kas"},
		{"gitlab_api.secret", string(c.GitLabAPI.Secret), secret32},
		{"workspaces.domain", c.Workspaces.Domain, "ws.example.com"},
		{"workspaces.insecure_http", c.Workspaces.InsecureHTTP, false},
		{"workspaces.oidc.scopes", strings.Join(c.Workspaces.OIDC.Scopes, " "), "openid profile"},
		{"workspaces.authorizer.file", c.Workspaces.Authorizer.File, filepath.Join(dir, "ws.yaml")},
		{"workspaces.authorizer.timeout", c.Workspaces.Authorizer.Timeout.Duration, 5 * time.Second},
		{"workspaces.session.ttl", c.Workspaces.Session.TTL.Duration, 12 * time.Hour},
		{"workspaces.session.recheck", c.Workspaces.Session.Recheck.Duration, 30 * time.Second},
		{"workspaces.logins.per_client", c.Workspaces.Logins.PerClient, 100},
		{"workspaces.logins.total", c.Workspaces.Logins.Total, 100_000},
		{"aggregation.prefix", c.Aggregation.Prefix, "/k8s"},
		{"aggregation.member_down", c.Aggregation.MemberDown, "fail"},
		{"aggregation.clusters[0].token", string(c.Aggregation.Clusters[0].Token), "tok"},
		{"DefaultRegistry", DefaultRegistry().Refresh, c.Registry.Refresh},
		{"DefaultGitLabAPI", DefaultGitLabAPI().Audience, "gitlab-kas"},
		{"DefaultWorkspaces", DefaultWorkspaces().Session.TTL, c.Workspaces.Session.TTL},
		{"DefaultAggregation", DefaultAggregation().MemberDown, "fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
			}
		})
	}
}

func TestExamples(t *testing.T) {
	for _, name := range []string{"edge.yaml", "minimal.yaml"} {
		t.Run(name, func(t *testing.T) {
			c, err := Load(filepath.Join("..", "examples", name))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if _, ok := c.LegacyCell(); !ok {
				t.Errorf("legacy cell: got none, want one")
			}
		})
	}
	t.Run("edge.yaml contents", func(t *testing.T) {
		c, err := Load(filepath.Join("..", "examples", "edge.yaml"))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if got, want := len(c.Cells), 3; got != want {
			t.Fatalf("cells: got %d, want %d", got, want)
		}
		if got, want := c.Cells[2].Ranges[1], (IDRange{10000000, 19999999}); got != want {
			t.Errorf("cells[2].ranges[1]: got %v, want %v", got, want)
		}
		k := c.Tokens.JobJWT.Keys[0]
		abs, _ := filepath.Abs(filepath.Join("..", "examples", "keys", "gitlab-jwt.pub"))
		if k.File != abs {
			t.Errorf("key file: got %q, want %q", k.File, abs)
		}
		if !strings.Contains(string(k.PEM), "BEGIN PUBLIC KEY") {
			t.Errorf("key PEM: not read")
		}
		if got, want := c.Routing.TrustedPrefixes[0], netip.MustParsePrefix("127.0.0.1/32"); got != want {
			t.Errorf("trusted prefix: got %v, want %v", got, want)
		}
	})
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing file is not Problems", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "none.yaml"))
		var ps Problems
		if err == nil || errors.As(err, &ps) || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Load: got %v, want a wrapped os.ErrNotExist", err)
		}
	})
	t.Run("bad config is Problems", func(t *testing.T) {
		p := writeFile(t, dir, "bad.yaml", "tokens: {job_jwt: {verify: false}}\ncells: []\n")
		_, err := Load(p)
		var ps Problems
		if !errors.As(err, &ps) {
			t.Fatalf("Load: got %v, want Problems", err)
		}
		if got, want := err.Error(), p+":2: cells: no cells configured"; got != want {
			t.Errorf("error: got %q, want %q", got, want)
		}
	})
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "edge.yaml", Path: "cells[1].url", Line: 12, Message: "must be an absolute http(s) URL"}, "edge.yaml:12: cells[1].url: must be an absolute http(s) URL"},
		{Problem{File: "edge.yaml", Path: "cells", Message: "no cells configured"}, "edge.yaml: cells: no cells configured"},
		{Problem{File: "edge.yaml", Line: 3, Message: "mapping values are not allowed in this context"}, "edge.yaml:3: mapping values are not allowed in this context"},
		{Problem{Path: "cells", Message: "no cells configured"}, "config: cells: no cells configured"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("String: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMultipleProblems(t *testing.T) {
	src := lines(
		"log: {level: loud}", // 1
		"listen:",            // 2
		"  publik: \":80\"",  // 3
		"cells:",             // 4
		"  - {id: 1, url: \"http://a\", id_ranges: [\"5-1\"]}", // 5
		"  - {id: 1, url: \"http://b\"}",                       // 6
		"routing:",                                             // 7
		"  long_poll_timeout: soon",                            // 8
		"  trusted_proxies: [nope]",                            // 9
	)
	_, ps := parse(t, "", src)
	want := []string{
		"edge.yaml:1: log.level: must be debug, info, warn or error",
		"edge.yaml:3: listen.publik: unknown field (did you mean public?)",
		"edge.yaml:4: cells: no cell has legacy: true; exactly one must (it gets every request no other rule routes)",
		`edge.yaml:5: cells[0].id_ranges[0]: "5-1": 5 is greater than 1`,
		"edge.yaml:6: cells[1].id: duplicate cell id 1 (also cells[0])",
		`edge.yaml:8: routing.long_poll_timeout: must be a duration like "65s", "5m" or "24h"`,
		`edge.yaml:9: routing.trusted_proxies[0]: "nope" is not a CIDR (like 10.0.0.0/8) or an IP address`,
	}
	if got := ps.Error(); got != strings.Join(want, "\n") {
		t.Errorf("problems:\ngot:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestValidateCodeBuiltConfig(t *testing.T) {
	c := Default()
	c.Tokens.JobJWT.Verify = false
	c.Cells = []Cell{
		{ID: 1, URL: "http://127.0.0.1:3001", Legacy: true, IDRanges: []string{"1-10"}},
		{ID: 2, URL: "http://127.0.0.1:3002", Ranges: []IDRange{{11, 20}}},
	}
	c.Routing.TrustedProxies = []string{"10.0.0.1", "fd00::/8"}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got, want := c.Cells[0].Ranges[0], (IDRange{1, 10}); got != want {
		t.Errorf("cells[0] range: got %v, want %v", got, want)
	}
	if got, want := c.Routing.TrustedPrefixes[0], netip.MustParsePrefix("10.0.0.1/32"); got != want {
		t.Errorf("trusted[0]: got %v, want %v", got, want)
	}
	if got, want := c.Routing.TrustedPrefixes[1], netip.MustParsePrefix("fd00::/8"); got != want {
		t.Errorf("trusted[1]: got %v, want %v", got, want)
	}
	c.Cells[1].Ranges = []IDRange{{5, 20}}
	err := c.Validate()
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Validate: got %v, want Problems", err)
	}
	if got, want := ps[0].Path, "cells[1].id_ranges[0]"; got != want {
		t.Errorf("overlap path: got %q, want %q", got, want)
	}
}

func TestOverlappingRanges(t *testing.T) {
	tests := []struct {
		name   string
		ranges [3]string // YAML id_ranges of cells 1, 2, 3
		want   []string  // problem paths
		msg    string
	}{
		{"disjoint", [3]string{`["1-10"]`, `["11-20"]`, `["21-30", "40-50"]`}, nil, ""},
		{"adjacent edge", [3]string{`["1-10"]`, `["10-20"]`, `[]`}, []string{"cells[1].id_ranges[0]"}, "10-20 overlaps 1-10 (cells[0].id_ranges[0]): ranges of cell 1 and cell 2 must not overlap"},
		{"contained", [3]string{`["1-100"]`, `[]`, `["40-50"]`}, []string{"cells[2].id_ranges[0]"}, "ranges of cell 1 and cell 3 must not overlap"},
		{"second range of a cell", [3]string{`["1-10"]`, `["20-30"]`, `["31-40", "25-26"]`}, []string{"cells[2].id_ranges[1]"}, "ranges of cell 2 and cell 3"},
		{"same cell may overlap", [3]string{`["1-10", "5-8"]`, `[]`, `[]`}, nil, ""},
		{"single ids", [3]string{`["7-7"]`, `["7-7"]`, `["8-8"]`}, []string{"cells[1].id_ranges[0]"}, "7-7 overlaps 7-7"},
		{"full range", [3]string{`["0-18446744073709551615"]`, `["18446744073709551615-18446744073709551615"]`, `[]`}, []string{"cells[1].id_ranges[0]"}, "cell 1 and cell 2"},
		{"several", [3]string{`["1-100"]`, `["50-60"]`, `["55-58"]`}, []string{"cells[1].id_ranges[0]", "cells[2].id_ranges[0]"}, "overlaps 1-100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := lines(
				"tokens: {job_jwt: {verify: false}}",
				"cells:",
				`  - {id: 1, url: "http://a", legacy: true, id_ranges: `+tt.ranges[0]+`}`,
				`  - {id: 2, url: "http://b", id_ranges: `+tt.ranges[1]+`}`,
				`  - {id: 3, url: "http://c", id_ranges: `+tt.ranges[2]+`}`,
			)
			_, ps := parse(t, "", src)
			var got []string
			for _, p := range ps {
				got = append(got, p.Path)
				if !strings.Contains(p.Message, tt.msg) {
					t.Errorf("%s: got %q, want it to contain %q", p.Path, p.Message, tt.msg)
				}
				if want := 3 + int(p.Path[6]-'0'); p.Line != want {
					t.Errorf("%s line: got %d, want %d", p.Path, p.Line, want)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("problems: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOverlapSweep compares the sweep with checking every pair, on random ranges.
func TestOverlapSweep(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		c := &Config{}
		for i := range 1 + rng.IntN(5) {
			cell := Cell{ID: uint64(i + 1)}
			for range rng.IntN(4) {
				lo := rng.Uint64N(100)
				cell.Ranges = append(cell.Ranges, IDRange{lo, lo + rng.Uint64N(20)})
			}
			c.Cells = append(c.Cells, cell)
		}
		ch := newChecker("", nil)
		c.checkOverlaps(ch)
		got := map[string]bool{}
		for _, p := range ch.problems {
			got[p.Path] = true
		}
		for i, a := range c.Cells {
			for j, ra := range a.Ranges {
				want := false
				for k, b := range c.Cells {
					for l, rb := range b.Ranges {
						earlier := rb.Lo < ra.Lo || rb.Lo == ra.Lo && (k < i || k == i && l < j)
						if k != i && earlier && rb.Hi >= ra.Lo {
							want = true
						}
					}
				}
				path := fmt.Sprintf("cells[%d].id_ranges[%d]", i, j)
				if got[path] != want {
					t.Fatalf("round %d: %s: got problem %v, want %v (cells %+v)", round, path, got[path], want, c.Cells)
				}
			}
		}
	}
}

func TestAliases(t *testing.T) {
	t.Run("aliases are followed", func(t *testing.T) {
		c := mustParse(t, "", lines(
			"tokens: {job_jwt: {verify: false}}",
			"routing: {trusted_proxies: &nets [10.0.0.0/8]}",
			"cells:",
			`  - {id: 1, url: &u "http://a", legacy: true}`,
		))
		if got, want := len(c.Routing.TrustedPrefixes), 1; got != want {
			t.Errorf("trusted prefixes: got %d, want %d", got, want)
		}
	})
	t.Run("expansion is bounded", func(t *testing.T) {
		ranges := strings.Repeat(`"1-2", `, 999) + `"1-2"`
		cells := strings.Repeat("*c, ", 999) + "*c"
		_, ps := parse(t, "", lines(
			"tokens: {job_jwt: {verify: false}}",
			`x: &c {id: 1, url: "http://a", legacy: true, id_ranges: [`+ranges+`]}`,
			"cells: ["+cells+"]",
		))
		if !strings.Contains(ps.Error(), "expands to more than 100000 values") {
			t.Errorf("no problem about the expansion; got %d problems, first %v", len(ps), ps[0])
		}
	})
}
