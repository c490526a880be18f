package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/bench"
)

func TestWithBaselines(t *testing.T) {
	tests := []struct {
		in, want, added []string
	}{
		{in: []string{"nginx", "edge-b"}, want: []string{"nginx", "edge-b"}},
		{in: []string{"tunnel"}, want: []string{"edge-a", "tunnel"}, added: []string{"edge-a"}},
		{in: []string{"tunnel-hop"}, want: []string{"edge-a", "tunnel", "tunnel-hop"}, added: []string{"edge-a", "tunnel"}},
		{in: []string{"tunnel", "tunnel-hop", "transfer"}, want: []string{"edge-a", "tunnel", "tunnel-hop", "transfer"}, added: []string{"edge-a"}},
		// Selected cases keep the order they were given in.
		{in: []string{"tunnel-hop", "tunnel"}, want: []string{"tunnel-hop", "edge-a", "tunnel"}, added: []string{"edge-a"}},
		{in: []string{"direct", "tunnel", "edge-a"}, want: []string{"direct", "tunnel", "edge-a"}},
		{in: []string{"transfer"}, want: []string{"transfer"}},
		{in: []string{"edge-post"}, want: []string{"nginx-post", "plain-post", "edge-post"}, added: []string{"nginx-post", "plain-post"}},
		{in: []string{"edge-post", "plain-post", "nginx-post"}, want: []string{"edge-post", "plain-post", "nginx-post"}}, // all selected: as given
		{in: []string{"edge-post", "plain-post"}, want: []string{"nginx-post", "edge-post", "plain-post"}, added: []string{"nginx-post"}},
		{in: []string{"edge-1k"}, want: []string{"nginx-1k", "edge-1k"}, added: []string{"nginx-1k"}},
		{in: []string{"nginx-1k"}, want: []string{"nginx-1k"}},
		{in: []string{"edge-nethttp"}, want: []string{"edge-a", "edge-nethttp"}, added: []string{"edge-a"}},
		{in: []string{"edge-nethttp", "tunnel"}, want: []string{"edge-a", "edge-nethttp", "tunnel"}, added: []string{"edge-a"}},
		{in: []string{"edge-a", "edge-nethttp"}, want: []string{"edge-a", "edge-nethttp"}},
		{in: []string{"plain-post", "plain"}, want: []string{"plain-post", "plain"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.in, ","), func(t *testing.T) {
			got, added := withBaselines(tt.in)
			if !slices.Equal(got, tt.want) || !slices.Equal(added, tt.added) {
				t.Errorf("withBaselines(%v): got %v added %v, want %v added %v", tt.in, got, added, tt.want, tt.added)
			}
		})
	}
}

func TestTunnelURLsAndProcesses(t *testing.T) {
	h := &harness{upstreamPorts: [3]int{3001, 3002, 3003}, nginxPort: 4000, haproxyPort: 4100, caddyPort: 4200, plainPort: 4300, edgePort: 5000, edge2Port: 6000, edgeNetHTTPPort: 7000,
		nginx: &bench.Proc{Name: "nginx"}, haproxy: &bench.Proc{Name: "haproxy"}, caddy: &bench.Proc{Name: "caddy"}, plain: &bench.Proc{Name: "plain"}, edge: &bench.Proc{Name: "edge"}, edge2: &bench.Proc{Name: "edge2"}, agent: &bench.Proc{Name: "agent"}, redis: &bench.Proc{Name: "redis"},
		edgeNetHTTP: &bench.Proc{Name: "edge-nethttp"}}
	tok := caseTokens{api: "api-jwt"}
	cases := map[string]benchCase{}
	for _, c := range buildCases(allCaseIDs(), tok) {
		cases[c.id] = c
	}
	const discovery = "/api/v4/runners/router/discovery"
	tests := []struct {
		c     benchCase
		url   string
		procs []string
	}{
		{cases[caseDirect], "http://127.0.0.1:3001" + discovery, nil},
		{cases[caseNginx], "http://127.0.0.1:4000" + discovery, []string{"nginx"}},
		{cases[caseHAProxy], "http://127.0.0.1:4100" + discovery, []string{"haproxy"}},
		{cases[caseCaddy], "http://127.0.0.1:4200" + discovery, []string{"caddy"}},
		{cases[casePlain], "http://127.0.0.1:4300" + discovery, []string{"plain"}},
		{cases[casePlainPost], "http://127.0.0.1:4300/api/v4/projects/1/issues", []string{"plain"}},
		{cases[caseEdgeA], "http://127.0.0.1:5000" + discovery, []string{"edge"}},
		{cases[caseEdgePost], "http://127.0.0.1:5000/api/v4/projects/1/issues", []string{"edge"}},
		{cases[caseNginxPost], "http://127.0.0.1:4000/api/v4/projects/1/issues", []string{"nginx"}},
		{cases[caseNginx1K], "http://127.0.0.1:4000/bytes?n=1024", []string{"nginx"}},
		{cases[caseEdge1K], "http://127.0.0.1:5000/bytes?n=1024", []string{"edge"}},
		{cases[caseEdgeNetHTTP], "http://127.0.0.1:7000" + discovery, []string{"edge-nethttp"}},
		{cases[caseTunnel], "http://127.0.0.1:5000/-/api/v1/agents/a1/proxy/3001" + discovery, []string{"edge", "agent"}},
		{cases[caseTunnelHop], "http://127.0.0.1:6000/-/api/v1/agents/a1/proxy/3001" + discovery, []string{"edge2", "edge", "agent", "redis"}},
		{transferCase(caseDirect, bench.Download, 10, tok), "http://127.0.0.1:3001/bytes?n=10", nil},
		{transferCase(caseEdgeA, bench.Download, 10, tok), "http://127.0.0.1:5000/bytes?n=10", []string{"edge"}},
		{transferCase(caseNginx, bench.Download, 10, tok), "http://127.0.0.1:4000/bytes?n=10", []string{"nginx"}},
		{transferCase(caseNginx, bench.Upload, 10, tok), "http://127.0.0.1:4000/upload", []string{"nginx"}},
		{transferCase(caseTunnel, bench.Download, 10, tok), "http://127.0.0.1:5000/-/api/v1/agents/a1/proxy/3001/bytes?n=10", []string{"edge", "agent"}},
		{transferCase(caseTunnelHop, bench.Upload, 10, tok), "http://127.0.0.1:6000/-/api/v1/agents/a1/proxy/3001/upload", []string{"edge2", "edge", "agent", "redis"}},
	}
	for _, tt := range tests {
		t.Run(tt.c.id+" "+tt.c.method, func(t *testing.T) {
			if got := h.url(tt.c); got != tt.url {
				t.Errorf("url: got %s, want %s", got, tt.url)
			}
			var got []string
			for _, p := range h.pathProcs(tt.c) {
				got = append(got, p.name)
				if p.p == nil || p.p.Name != p.name {
					t.Errorf("part %s: process %v", p.name, p.p)
				}
			}
			if !slices.Equal(got, tt.procs) {
				t.Errorf("processes: got %v, want %v", got, tt.procs)
			}
			if tt.c.viaAgent && tt.c.headers["Authorization"] != "Bearer api-jwt" {
				t.Errorf("tunnel request without the API token")
			}
		})
	}
	if m := transferCase(caseDirect, bench.Upload, 10, tok).method; m != "POST" {
		t.Errorf("upload method: got %s, want POST", m)
	}
}

func TestLatencyCases(t *testing.T) {
	ids := func(cs []benchCase) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.id)
		}
		return out
	}
	all := buildCases(allCaseIDs(), caseTokens{})
	if got, want := ids(latencyCases(all)), []string{"direct", "edge-a", "tunnel", "tunnel-hop"}; !slices.Equal(got, want) {
		t.Errorf("latency cases: got %v, want %v", got, want)
	}
	if got := latencyCases(buildCases([]string{"direct", "edge-a", "edge-b"}, caseTokens{})); len(got) != 0 {
		t.Errorf("latency cases without a tunnel: got %v, want none", ids(got))
	}
}

func TestNeeds(t *testing.T) {
	tests := []struct {
		ids               []string
		agent, secondEdge bool
	}{
		{[]string{"direct", "nginx", "edge-a"}, false, false},
		{[]string{"edge-a", "tunnel"}, true, false},
		{[]string{"tunnel-hop"}, true, true},
		{[]string{"transfer"}, true, true},
	}
	for _, tt := range tests {
		if got := needsAgent(tt.ids); got != tt.agent {
			t.Errorf("needsAgent(%v): got %v, want %v", tt.ids, got, tt.agent)
		}
		if got := needsSecondEdge(tt.ids); got != tt.secondEdge {
			t.Errorf("needsSecondEdge(%v): got %v, want %v", tt.ids, got, tt.secondEdge)
		}
	}
}

// TestNeedsPeer: nginx starts for its wrk cases and for the transfer case, which moves 10 MiB
// through it; the other peers only for their wrk cases.
func TestNeedsPeer(t *testing.T) {
	tests := []struct {
		ids    []string
		target string
		want   bool
	}{
		{[]string{"transfer"}, targetNginx, true},
		{[]string{"edge-a", "tunnel", "tunnel-hop", "transfer"}, targetNginx, true},
		{[]string{"nginx-1k", "edge-1k"}, targetNginx, true},
		{[]string{"edge-a", "tunnel"}, targetNginx, false},
		{[]string{"transfer"}, targetHAProxy, false},
		{[]string{"transfer"}, targetPlain, false},
		{[]string{"haproxy"}, targetHAProxy, true},
	}
	for _, tt := range tests {
		if got := needsPeer(tt.ids, buildCases(tt.ids, caseTokens{}), tt.target); got != tt.want {
			t.Errorf("needsPeer(%v, %s): got %v, want %v", tt.ids, tt.target, got, tt.want)
		}
	}
}

func TestSpent(t *testing.T) {
	ms := time.Millisecond
	ps := []part{{"edge", nil}, {"agent", nil}, {"upstream", nil}}
	total, up, parts := spent(ps, []time.Duration{10 * ms, 20 * ms, 30 * ms}, []time.Duration{50 * ms, 30 * ms, 100 * ms})
	if total != 50*ms || up != 70*ms || parts["edge"] != 40*ms || parts["agent"] != 10*ms || len(parts) != 2 {
		t.Errorf("tunnel: got total %v upstream %v parts %v", total, up, parts)
	}
	total, up, parts = spent(ps[1:], []time.Duration{0, 0}, []time.Duration{5 * ms, 7 * ms})
	if total != 5*ms || up != 7*ms || parts != nil {
		t.Errorf("one proxy: got total %v upstream %v parts %v, want no split", total, up, parts)
	}
	total, up, parts = spent(ps[2:], []time.Duration{0}, []time.Duration{7 * ms})
	if total != 0 || up != 7*ms || parts != nil {
		t.Errorf("direct: got total %v upstream %v parts %v", total, up, parts)
	}
}

func TestLatencyDuration(t *testing.T) {
	tests := []struct{ in, want time.Duration }{
		{10 * time.Second, 5 * time.Second},
		{3 * time.Second, 2 * time.Second},
		{time.Second, time.Second},
	}
	for _, tt := range tests {
		h := &harness{opts: options{duration: tt.in}}
		if got := h.latencyDuration(); got != tt.want {
			t.Errorf("latencyDuration(%v): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseConnections(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{`{"connections":[]}`, 0, false},
		{`{"connections":[{"agent_id":"a1","edge":"http://127.0.0.1:1"},{"agent_id":"a1"}]}`, 2, false},
		{`{}`, 0, true},
		{`not json`, 0, true},
	}
	for _, tt := range tests {
		got, err := parseConnections([]byte(tt.in))
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseConnections(%s): got %d %v, want %d error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestReadHeaderFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("Authorization: Bearer a:b\n\nX-A: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := readHeaderFile(good)
	if err != nil || h.Get("Authorization") != "Bearer a:b" || h.Get("X-A") != "1" {
		t.Errorf("headers: got %v %v", h, err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("secret-without-name\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readHeaderFile(bad); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad line: got %v, want an error that does not repeat the line", err)
	}
	if h, err := readHeaderFile(""); err != nil || len(h) != 0 {
		t.Errorf("no file: got %v %v", h, err)
	}
}

// TestTransferClient runs the client against a stand-in upstream on loopback: downloads and
// uploads are measured and checked, and a short answer fails.
func TestTransferClient(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Bench-Body-Bytes", strconv.FormatInt(n, 10))
		if r.URL.Path == "/bytes" {
			size, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Header().Set("Content-Length", strconv.Itoa(size))
			_, _ = w.Write(make([]byte, size))
		}
	}))
	defer srv.Close()
	hdr := filepath.Join(t.TempDir(), "h")
	if err := os.WriteFile(hdr, []byte("Authorization: Bearer x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const size = 3 << 20
	tests := []struct {
		name, method, url string
		size              int64
		wantCode          int
	}{
		{"download", "GET", fmt.Sprintf("%s/bytes?n=%d", srv.URL, size), size, 0},
		{"upload", "POST", srv.URL + "/upload", size, 0},
		{"short download", "GET", fmt.Sprintf("%s/bytes?n=%d", srv.URL, size-1), size, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			auth = nil
			mu.Unlock()
			var out, errOut strings.Builder
			code := runTransferClient([]string{"--url", tt.url, "--method", tt.method, "--bytes", strconv.FormatInt(tt.size, 10),
				"--count", "2", "--warmup", "1", "--header-file", hdr}, &out, &errOut)
			if code != tt.wantCode {
				t.Fatalf("exit: got %d, want %d (stderr %s)", code, tt.wantCode, errOut.String())
			}
			if tt.wantCode != 0 {
				return
			}
			samples, err := bench.ParseTransferOutput(out.String())
			if err != nil || len(samples) != 2 || samples[0].Bytes != size {
				t.Errorf("samples: got %v %v, want 2 of %d bytes", samples, err, size)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auth) != 3 || auth[0] != "Bearer x" {
				t.Errorf("requests: got %d with Authorization %v, want 3 with the header", len(auth), auth)
			}
		})
	}
	if code := runTransferClient([]string{"--method", "PUT"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("bad flags: got exit %d, want 2", code)
	}
}
