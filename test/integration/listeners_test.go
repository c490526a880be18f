package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every listener answers a refusal with the one error body and headers: the public listener
// (runner proxy, tunnel connect, API for GitLab, agent paths), the internal and the ops listener.
func TestErrorBodyOnEveryListener(t *testing.T) {
	var internalAddr string
	f := newFrontEnv(t, func(c *edgeConfig) {
		internalAddr = freeAddr(t)
		c.Listen.Internal = internalAddr
		dir := t.TempDir()
		path := filepath.Join(dir, "internal.key")
		if err := os.WriteFile(path, []byte(strings.Repeat("i", 40)), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Internal = &secretConfig{SecretFile: path}
	})
	public := []struct {
		name string
		row  frontRow
		want int
	}{
		{"runner proxy", frontRow{method: "GET", path: "/api/v4/jobs/1/trace", headers: []string{"JOB-TOKEN: a", "JOB-TOKEN: b"}}, 400},
		{"tunnel connect", frontRow{method: "GET", path: "/-/agent/connect", headers: []string{"Connection: Upgrade", "Upgrade: edge-tunnel", "Authorization: Bearer not-a-jwt"}}, 401},
		{"tunnel connect without upgrade", frontRow{method: "GET", path: "/-/agent/connect"}, 426},
		{"API for GitLab without JWT", frontRow{method: "GET", path: "/-/api/v1/agents/a1/connections"}, 401},
		{"agent path, bad agent id", frontRow{method: "GET", path: "/-/api/v1/agents/a%21/proxy/80/", headers: []string{"Authorization: Bearer " + f.apiToken}}, 400},
		{"agent not connected", frontRow{method: "GET", path: "/-/api/v1/agents/a1/proxy/80/", headers: []string{"Authorization: Bearer " + f.apiToken}}, 504},
	}
	for _, tt := range public {
		t.Run("public "+tt.name, func(t *testing.T) {
			s := f.serve(t, tt.row)
			if s.status != tt.want {
				t.Errorf("status %d, want %d (%s)", s.status, tt.want, s.body)
			}
			checkErrorBody(t, s.header, s.body)
		})
	}
	others := []struct {
		name, method, url string
		header            http.Header
		want              int
	}{
		{"internal without JWT", "GET", "http://" + internalAddr + "/x", http.Header{"Edge-Agent-Id": {"a1"}, "Edge-Port": {"80"}, "Edge-Hop": {"1"}}, 401},
		{"internal without agent", "GET", "http://" + internalAddr + "/x", nil, 400},
		{"ops unknown path", "GET", f.edge.OpsURL + "/nothing", nil, 404},
		{"ops wrong method", "POST", f.edge.OpsURL + "/metrics", nil, 405},
	}
	for _, tt := range others {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tt.want, body)
			}
			checkErrorBody(t, resp.Header, string(body))
		})
	}
}

// One access line per request at info, with what an operator needs to find it; the request id
// is kept from a trusted proxy, sent to the cell and returned.
func TestAccessLogAndRequestID(t *testing.T) {
	f := newFrontEnv(t, func(c *edgeConfig) { c.Routing.TrustedProxies = []string{"127.0.0.1/32"} })
	s := f.serve(t, frontRow{method: "GET", path: "/api/v4/jobs/2000005/trace?secret=q", headers: []string{"X-Request-Id: trusted-proxy-id-1"}})
	if got := s.header.Get("X-Request-Id"); got != "trusted-proxy-id-1" {
		t.Errorf("answer's X-Request-Id %q, want the trusted proxy's", got)
	}
	if got := s.seen[2]; len(got) != 1 || got[0].header.Get("X-Request-Id") != "trusted-proxy-id-1" {
		t.Errorf("cell 2 did not get the request id: %v", got)
	}
	line := f.accessLine(t, "trusted-proxy-id-1")
	want := map[string]*regexp.Regexp{
		"method":   regexp.MustCompile(`^GET$`),
		"path":     regexp.MustCompile(`^/api/v4/jobs/2000005/trace$`),
		"status":   regexp.MustCompile(`^200$`),
		"bytes":    regexp.MustCompile(`^[1-9][0-9]*$`),
		"duration": regexp.MustCompile(`^[0-9.]+(ns|µs|us|ms|s)$`),
		"route":    regexp.MustCompile(`^runner$`),
		"cell":     regexp.MustCompile(`^2$`),
		"rule":     regexp.MustCompile(`^job_id_range$`),
		"level":    regexp.MustCompile(`^INFO$`),
	}
	for k, re := range want {
		if v := field(line, k); !re.MatchString(v) {
			t.Errorf("access line %s=%q, want %s\n%s", k, v, re, line)
		}
	}
	if strings.Contains(line, "secret=q") {
		t.Errorf("access line holds the query: %s", line)
	}

	// Without a trusted proxy the id is edge's own, fresh for every request.
	g := newFrontEnv(t, nil)
	a := g.serve(t, frontRow{method: "GET", path: "/explore", headers: []string{"X-Request-Id: from-a-client"}})
	b := g.serve(t, frontRow{method: "GET", path: "/explore"})
	idA, idB := a.header.Get("X-Request-Id"), b.header.Get("X-Request-Id")
	if idA == "from-a-client" || idA == idB || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(idA) {
		t.Errorf("request ids %q and %q: want two fresh ids of edge's own", idA, idB)
	}
	if got := a.seen[1][0].header.Get("X-Request-Id"); got != idA {
		t.Errorf("cell got request id %q, client got %q", got, idA)
	}
	// The startup line says what runs.
	out := g.edge.out.String()
	start := ""
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, `msg="edge starting"`) {
			start = l
		}
	}
	for _, k := range []string{"version", "commit", "config", "cells", "features"} {
		if field(start, k) == "" {
			t.Errorf("startup line lacks %s: %q", k, start)
		}
	}
}

// log.access: false turns the access lines off.
func TestAccessLogOff(t *testing.T) {
	f := newFrontEnv(t, func(c *edgeConfig) { c.Log.Access = new(false) })
	for _, row := range []frontRow{{method: "GET", path: "/explore"}, {method: "GET", path: "/api/v4/jobs/2000005/trace"}} {
		if s := f.send(t, row); s.status != http.StatusOK {
			t.Fatalf("status %d", s.status)
		}
	}
	// Once edge has exited, everything it would have logged is in its output.
	f.edge.stop(10 * time.Second)
	if strings.Contains(f.edge.out.String(), "msg=access") {
		t.Errorf("access lines written with log.access: false")
	}
}
