package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		duration time.Duration
		warmup   time.Duration
		rounds   int
		cases    []string
		wantErr  string
	}{
		{name: "defaults", duration: 10 * time.Second, warmup: 2 * time.Second, rounds: 3, cases: allCaseIDs()},
		{name: "quick", args: []string{"--quick"}, duration: 3 * time.Second, warmup: time.Second, rounds: 3, cases: allCaseIDs()},
		{name: "quick from env", env: map[string]string{"EDGEBENCH_QUICK": "1"}, duration: 3 * time.Second, warmup: time.Second, rounds: 3, cases: allCaseIDs()},
		{name: "quick keeps explicit duration", args: []string{"--quick", "--duration", "5s"}, duration: 5 * time.Second, warmup: time.Second, rounds: 3, cases: allCaseIDs()},
		{name: "quick keeps env duration", args: []string{"--quick"}, env: map[string]string{"EDGEBENCH_DURATION": "7"}, duration: 7 * time.Second, warmup: time.Second, rounds: 3, cases: allCaseIDs()},
		{name: "env rounds and cases", env: map[string]string{"EDGEBENCH_ROUNDS": "5", "EDGEBENCH_CASES": "nginx, edge-b,nginx"}, duration: 10 * time.Second, warmup: 2 * time.Second, rounds: 5, cases: []string{"nginx", "edge-b"}},
		{name: "unknown case", args: []string{"--cases", "edge-x"}, wantErr: "unknown case"},
		{name: "no cases", args: []string{"--cases", ","}, wantErr: "no cases"},
		{name: "zero rounds", args: []string{"--rounds", "0"}, wantErr: "rounds"},
		{name: "sub-second", args: []string{"--duration", "500ms"}, wantErr: "at least 1s"},
		{name: "threads over connections", args: []string{"--threads", "4", "--connections", "2"}, wantErr: "threads"},
		{name: "profile direct", args: []string{"--profile", "direct"}, wantErr: "no proxy"},
		{name: "profile unselected", args: []string{"--cases", "nginx", "--profile", "edge-b"}, wantErr: "not among"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected"},
		{name: "tunnel part", args: []string{"--quick", "--cases", "tunnel,tunnel-hop,transfer"}, duration: 3 * time.Second, warmup: time.Second, rounds: 3,
			cases: []string{"edge-a", "tunnel", "tunnel-hop", "transfer"}},
		{name: "post brings its baseline", args: []string{"--cases", "edge-a,nginx,edge-c,edge-d,edge-post"}, duration: 10 * time.Second, warmup: 2 * time.Second, rounds: 3,
			cases: []string{"edge-a", "nginx", "edge-c", "edge-d", "nginx-post", "plain-post", "edge-post"}},
		{name: "issue 26's cases bring theirs", args: []string{"--cases", "edge-1k,edge-post,edge-nethttp"}, duration: 10 * time.Second, warmup: 2 * time.Second, rounds: 3,
			cases: []string{"nginx-1k", "edge-1k", "nginx-post", "plain-post", "edge-post", "edge-a", "edge-nethttp"}},
		{name: "profile the net/http edge", args: []string{"--cases", "edge-nethttp", "--profile", "edge-nethttp"}, duration: 10 * time.Second, warmup: 2 * time.Second, rounds: 3,
			cases: []string{"edge-a", "edge-nethttp"}},
		{name: "profile the plain proxy", args: []string{"--cases", "plain,plain-post", "--profile", "plain-post"}, duration: 10 * time.Second, warmup: 2 * time.Second, rounds: 3,
			cases: []string{"plain", "plain-post"}},
		{name: "profile transfer", args: []string{"--cases", "transfer", "--profile", "transfer"}, wantErr: "only wrk cases"},
		{name: "zero transfers", args: []string{"--transfers", "0"}, wantErr: "transfers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"EDGEBENCH_QUICK", "EDGEBENCH_DURATION", "EDGEBENCH_WARMUP", "EDGEBENCH_ROUNDS", "EDGEBENCH_CASES"} {
				t.Setenv(k, tt.env[k])
			}
			o, err := parseOptions(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error: got %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseOptions: %v", err)
			}
			if o.duration != tt.duration || o.warmup != tt.warmup || o.rounds != tt.rounds {
				t.Errorf("duration/warmup/rounds: got %v/%v/%v, want %v/%v/%v", o.duration, o.warmup, o.rounds, tt.duration, tt.warmup, tt.rounds)
			}
			if !slices.Equal(o.cases, tt.cases) {
				t.Errorf("cases: got %v, want %v", o.cases, tt.cases)
			}
		})
	}
}

// TestParseOptionsGoalsAndResults: the goals' 64 connections by default, and the results
// directory from the flag or the environment (make bench passes the flag).
func TestParseOptionsGoalsAndResults(t *testing.T) {
	for _, k := range []string{"EDGEBENCH_CONNECTIONS", "EDGEBENCH_RESULTS", "EDGEBENCH_CADDY_BIN"} {
		t.Setenv(k, "")
	}
	o, err := parseOptions(nil, io.Discard)
	if err != nil || o.connections != 64 || o.results != "" || o.caddyBin != "" {
		t.Errorf("defaults: got connections %d results %q caddy %q (%v), want 64, none, none", o.connections, o.results, o.caddyBin, err)
	}
	t.Setenv("EDGEBENCH_RESULTS", "/tmp/from-env")
	if o, err := parseOptions(nil, io.Discard); err != nil || o.results != "/tmp/from-env" {
		t.Errorf("results from env: got %q (%v)", o.results, err)
	}
	if o, err := parseOptions([]string{"--results", "r1", "--caddy-bin", "/x/caddy"}, io.Discard); err != nil || o.results != "r1" || o.caddyBin != "/x/caddy" {
		t.Errorf("results flag: got %q caddy %q (%v)", o.results, o.caddyBin, err)
	}
}

func TestBuildCases(t *testing.T) {
	cases := buildCases(allCaseIDs(), caseTokens{runner: "glrt-t2_R", jobJWT: "glcbt-J", api: "api-jwt"})
	type want struct {
		target, method, header, token string
		upstream                      int
		bodyHasToken                  bool
	}
	wants := map[string]want{
		caseDirect:      {target: targetDirect, method: "GET"},
		caseNginx:       {target: targetNginx, method: "GET"},
		caseHAProxy:     {target: targetHAProxy, method: "GET"},
		caseCaddy:       {target: targetCaddy, method: "GET"},
		casePlain:       {target: targetPlain, method: "GET"},
		caseFloor:       {target: targetFloor, method: "GET"},
		caseEdgeA:       {target: targetEdge, method: "GET"},
		caseEdgeNetHTTP: {target: targetEdgeNetHTTP, method: "GET"},
		caseNginx1K:     {target: targetNginx, method: "GET"},
		caseEdge1K:      {target: targetEdge, method: "GET"},
		caseNginxPost:   {target: targetNginx, method: "POST"},
		caseEdgeB:       {target: targetEdge, method: "GET", header: "RUNNER-TOKEN", token: "glrt-t2_R", upstream: 1},
		caseEdgeC:       {target: targetEdge, method: "POST", upstream: 1, bodyHasToken: true},
		caseEdgeD:       {target: targetEdge, method: "GET", header: "JOB-TOKEN", token: "glcbt-J", upstream: 2},
		casePlainPost:   {target: targetPlain, method: "POST"},
		caseEdgePost:    {target: targetEdge, method: "POST"},
		caseTunnel:      {target: targetEdge, method: "GET", header: "Authorization", token: "Bearer api-jwt"},
		caseTunnelHop:   {target: targetEdge2, method: "GET", header: "Authorization", token: "Bearer api-jwt"},
	}
	if len(cases) != len(wants) {
		t.Fatalf("cases: got %d, want %d", len(cases), len(wants))
	}
	for _, c := range cases {
		w := wants[c.id]
		if c.target != w.target || c.method != w.method || c.wantUpstream != w.upstream {
			t.Errorf("%s: got target %s method %s upstream %d, want %s %s %d", c.id, c.target, c.method, c.wantUpstream, w.target, w.method, w.upstream)
		}
		if w.header != "" && c.headers[w.header] != w.token {
			t.Errorf("%s: header %s: got %q, want %q", c.id, w.header, c.headers[w.header], w.token)
		}
		for _, h := range []string{"RUNNER-TOKEN", "JOB-TOKEN", "PRIVATE-TOKEN", "Authorization"} {
			if _, ok := c.headers[h]; ok && h != w.header {
				t.Errorf("%s: unexpected token header %s", c.id, h)
			}
		}
		if got := strings.Contains(c.body, `"token":"glrt-t2_R"`); got != w.bodyHasToken {
			t.Errorf("%s: body has token: got %v, want %v", c.id, got, w.bodyHasToken)
		}
		if c.label == "" {
			t.Errorf("%s: no label", c.id)
		}
		if got, want := c.viaAgent, c.id == caseTunnel || c.id == caseTunnelHop; got != want {
			t.Errorf("%s: via agent: got %v, want %v", c.id, got, want)
		}
	}
	byID := map[string]benchCase{}
	for _, c := range cases {
		byID[c.id] = c
	}
	pick := func(ids ...string) []benchCase {
		var out []benchCase
		for _, id := range ids {
			out = append(out, byID[id])
		}
		return out
	}
	if !needsEdge(pick(caseDirect, caseEdgeA)) || !needsEdge(pick(caseEdgePost)) || !needsEdge(pick(caseEdgeNetHTTP)) || !needsEdge(pick(caseEdge1K)) ||
		needsEdge(pick(caseDirect, caseNginx, caseHAProxy, caseCaddy, casePlain, casePlainPost, caseNginxPost, caseNginx1K)) {
		t.Errorf("needsEdge disagrees with the targets")
	}
	for _, tt := range []struct {
		ids    []string
		target string
		want   bool
	}{
		{[]string{caseNginx, caseEdgeA}, targetNginx, true},
		{[]string{caseHAProxy}, targetHAProxy, true},
		{[]string{caseCaddy}, targetCaddy, true},
		{[]string{casePlain}, targetPlain, true},
		{[]string{casePlainPost, caseEdgePost}, targetPlain, true},
		{[]string{caseEdgePost}, targetPlain, false},
		{[]string{caseNginx, caseHAProxy, caseCaddy, caseEdgeA}, targetPlain, false},
		{[]string{caseDirect, caseNginx, caseEdgeA}, targetCaddy, false},
		{[]string{caseEdgeA, caseTunnel}, targetNginx, false},
		{[]string{caseNginx1K}, targetNginx, true},
		{[]string{caseNginxPost, caseEdgePost}, targetNginx, true},
		{[]string{caseEdgeNetHTTP}, targetEdgeNetHTTP, true},
		{[]string{caseEdgeA, caseEdge1K}, targetEdgeNetHTTP, false},
	} {
		if got := needsTarget(pick(tt.ids...), tt.target); got != tt.want {
			t.Errorf("needsTarget(%v, %s): got %v, want %v", tt.ids, tt.target, got, tt.want)
		}
	}
}

// TestPostCases: the POST cases send the same 512-byte body to the same legacy path, through
// nginx, the plain httputil proxy and edge, and are checked against cell 1 with the body whole
// (verify compares Bench-Body-Bytes with len(body)).
func TestPostCases(t *testing.T) {
	byID := map[string]benchCase{}
	for _, c := range buildCases([]string{caseNginxPost, casePlainPost, caseEdgePost, casePlain}, caseTokens{}) {
		byID[c.id] = c
	}
	nginx, plain, edge := byID[caseNginxPost], byID[casePlainPost], byID[caseEdgePost]
	for _, c := range []benchCase{nginx, plain, edge} {
		if c.method != "POST" || c.path != "/api/v4/projects/1/issues" || len(c.body) != 512 || c.wantUpstream != 0 ||
			c.headers["Content-Type"] != "application/octet-stream" || len(c.headers) != 1 || c.viaAgent {
			t.Errorf("%s: got %s %s, %d body bytes, upstream %d, headers %v", c.id, c.method, c.path, len(c.body), c.wantUpstream, c.headers)
		}
	}
	if plain.body != edge.body || nginx.body != edge.body || plain.target != targetPlain || edge.target != targetEdge || nginx.target != targetNginx {
		t.Errorf("the POST cases differ in more than their target: %s, %s, %s", nginx.target, plain.target, edge.target)
	}
	if c := byID[casePlain]; c.method != "GET" || c.path != "/api/v4/runners/router/discovery" || c.body != "" {
		t.Errorf("plain: got %s %s", c.method, c.path)
	}
	if got := latencyCases(buildCases([]string{casePlain, caseNginxPost, casePlainPost, caseEdgePost}, caseTokens{})); len(got) != 0 {
		t.Errorf("latency cases without a tunnel: got %d, want none", len(got))
	}
}

// TestVerifyPost runs the pre-flight check of the POST cases against a stand-in for the upstream
// (it names its port and counts the body bytes, as bench/cmd/upstream does): the whole body at
// cell 1 passes; a proxy that loses part of the body, or a wrong cell, fails the run.
func TestVerifyPost(t *testing.T) {
	var drop atomic.Int64 // body bytes the stand-in pretends it did not get
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		_, port, _ := net.SplitHostPort(r.Host)
		w.Header().Set("Bench-Upstream", port)
		w.Header().Set("Bench-Body-Bytes", strconv.FormatInt(n-drop.Load(), 10))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	h := &harness{upstreamPorts: [3]int{port, port + 1, port + 2}, plainPort: port, edgePort: port, nginxPort: port}
	cases := buildCases([]string{casePlainPost, caseEdgePost, caseNginxPost}, caseTokens{})
	for _, c := range cases {
		if err := h.verify(context.Background(), c); err != nil {
			t.Errorf("%s: %v", c.id, err)
		}
	}
	drop.Store(1)
	if err := h.verify(context.Background(), cases[1]); err == nil || !strings.Contains(err.Error(), "511 body bytes, want 512") {
		t.Errorf("short body: got %v", err)
	}
	drop.Store(0)
	h.upstreamPorts = [3]int{port + 1, port, port + 2}
	if err := h.verify(context.Background(), cases[0]); err == nil || !strings.Contains(err.Error(), "(cell 2), want") {
		t.Errorf("wrong cell: got %v", err)
	}
}

func TestGCSetting(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := gcSetting(getenv); got != "" {
		t.Errorf("no GC setting: got %q", got)
	}
	env["GOGC"], env["GOMEMLIMIT"] = "50", "200MiB"
	if got := gcSetting(getenv); got != "GOGC=50 GOMEMLIMIT=200MiB" {
		t.Errorf("GC settings: got %q", got)
	}
}

func TestPlainInfo(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "plain.log")
	if err := os.WriteFile(log, []byte("plainproxy: listening 127.0.0.1:4300, upstream http://127.0.0.1:3001, GOMAXPROCS 1, go1.26.0\nlater\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := plainInfo(log); got != "GOMAXPROCS 1, go1.26.0" {
		t.Errorf("plainInfo: got %q", got)
	}
	if got := plainInfo(filepath.Join(dir, "none")); got != "log unreadable" {
		t.Errorf("plainInfo of no log: got %q", got)
	}
}

func TestFindRepo(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "bench", "cmd", "edgebench")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module gitlab.com/edge/edge\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := findRepo(deep)
	if err != nil || got != root {
		t.Errorf("findRepo: got %q %v, want %q", got, err, root)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := findRepo(other); err == nil {
		t.Errorf("findRepo of another module: got nil error")
	}
}
