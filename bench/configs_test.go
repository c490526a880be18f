package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/config"
)

func TestLuaQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"GET", `"GET"`},
		{`{"token":"glrt-x"}`, `"{\"token\":\"glrt-x\"}"`},
		{"a\\b\n\x00é", `"a\\b\010\000\195\169"`},
	}
	for _, tt := range tests {
		if got := LuaQuote(tt.in); got != tt.want {
			t.Errorf("LuaQuote(%q): got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestWrkScript(t *testing.T) {
	got := WrkScript("POST", map[string]string{"Content-Type": "application/json", "A": "1"}, `{"x":1}`)
	want := `wrk.method = "POST"
wrk.headers["A"] = "1"
wrk.headers["Content-Type"] = "application/json"
wrk.body = "{\"x\":1}"
`
	if got != want {
		t.Errorf("script:\ngot\n%s\nwant\n%s", got, want)
	}
}

// TestWrkScriptDrivesWrk runs the real wrk with a generated script against a recording server, so
// the request wrk sends and the output ParseWrk reads are both checked against the real tool.
func TestWrkScriptDrivesWrk(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Fatal("wrk not installed: make test installs it (apt-get install wrk)")
	}
	type seen struct {
		method, path, token, ctype, body string
	}
	var mu sync.Mutex
	var first *seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if first == nil {
			first = &seen{r.Method, r.URL.Path, r.Header.Get("RUNNER-TOKEN"), r.Header.Get("Content-Type"), string(b)}
		}
		mu.Unlock()
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()

	body := `{"token":"glrt-abc","last_update":"x"}`
	script := filepath.Join(t.TempDir(), "s.lua")
	if err := os.WriteFile(script, []byte(WrkScript("POST", map[string]string{"RUNNER-TOKEN": "tok", "Content-Type": "application/json"}, body)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, wrk, "-t1", "-c2", "-d1s", "--latency", "-s", script, srv.URL+"/api/v4/jobs/request").CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	res, err := ParseWrk(string(out))
	if err != nil {
		t.Fatalf("ParseWrk of real output: %v\n%s", err, out)
	}
	if res.Requests == 0 || res.RequestsPerS == 0 || res.Non2xx3xx != 0 {
		t.Errorf("wrk result: got %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	want := seen{"POST", "/api/v4/jobs/request", "tok", "application/json", body}
	if first == nil || *first != want {
		t.Errorf("request: got %+v, want %+v", first, want)
	}
}

func TestEdgeConfig(t *testing.T) {
	cfg := EdgeConfig(8080, 9090, [3]int{3001, 3002, 3003}, "/tmp/x y/gitlab-jwt.pub", "https://gitlab.example.com", "gitlab-authz-token", "k1", EdgeOptions{})
	if strings.Contains(cfg, "http1") {
		t.Errorf("default config names an HTTP/1.1 engine; it should leave edge's default:\n%s", cfg)
	}
	var got struct {
		Listen struct{ Public, Ops string }
		Cells  []struct {
			ID     int
			URL    string
			Legacy bool
		}
		Tokens struct {
			JobJWT struct {
				Verify   bool
				Keys     []struct{ Kid, Alg, File string }
				Issuer   string
				Audience string
			} `yaml:"job_jwt"`
		}
		Log struct{ Level string }
	}
	dec := yaml.NewDecoder(strings.NewReader(cfg))
	dec.KnownFields(true)
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("edge config is not the expected YAML: %v\n%s", err, cfg)
	}
	if got.Listen.Public != "127.0.0.1:8080" || got.Listen.Ops != "127.0.0.1:9090" {
		t.Errorf("listen: got %+v", got.Listen)
	}
	if len(got.Cells) != 3 || !got.Cells[0].Legacy || got.Cells[1].Legacy || got.Cells[2].URL != "http://127.0.0.1:3003" || got.Cells[1].ID != 2 {
		t.Errorf("cells: got %+v", got.Cells)
	}
	j := got.Tokens.JobJWT
	if !j.Verify || len(j.Keys) != 1 || j.Keys[0].File != "/tmp/x y/gitlab-jwt.pub" || j.Keys[0].Kid != "k1" || j.Keys[0].Alg != "RS256" ||
		j.Issuer != "https://gitlab.example.com" || j.Audience != "gitlab-authz-token" {
		t.Errorf("job_jwt: got %+v", j)
	}
	if got.Log.Level != "info" {
		t.Errorf("log level: got %q, want info: the access log is written at info", got.Log.Level)
	}
}

// TestEdgeConfigAgents has edge's own config package read the configs of the tunnel cases: the
// edge that holds the agent (with and without the shared registry) and the entry edge of the hop;
// and of edge-nethttp's edge, on net/http's server.
func TestEdgeConfigAgents(t *testing.T) {
	dir := t.TempDir()
	secret := strings.Repeat("s", 40)
	for _, f := range []string{"agent.key", "api.key", "internal.key", "gitlab-jwt.pub"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key, err := os.ReadFile(filepath.Join("..", "examples", "keys", "gitlab-jwt.key"))
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := ParseRSAPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := PublicKeyPEM(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gitlab-jwt.pub"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	holder := EdgeAgents{AgentKeyFile: "agent.key", APISecretFile: "api.key"}
	shared := EdgeAgents{InternalPort: 7001, RedisAddr: "127.0.0.1:6390", InternalSecretFile: "internal.key", AgentKeyFile: "agent.key", APISecretFile: "api.key"}
	entry := EdgeAgents{InternalPort: 7002, RedisAddr: "127.0.0.1:6390", InternalSecretFile: "internal.key", APISecretFile: "api.key"}
	tests := []struct {
		name      string
		agents    EdgeAgents
		agentKeys int
		internal  string
		redis     string
		http1     string
	}{
		{name: "none", agents: EdgeAgents{}},
		{name: "one edge", agents: holder, agentKeys: 1},
		{name: "holder with registry", agents: shared, agentKeys: 1, internal: "127.0.0.1:7001", redis: "127.0.0.1:6390"},
		{name: "entry edge", agents: entry, internal: "127.0.0.1:7002", redis: "127.0.0.1:6390"},
		{name: "net/http's server", http1: HTTP1NetHTTP},
		{name: "net/http's server and agents", agents: shared, agentKeys: 1, internal: "127.0.0.1:7001", redis: "127.0.0.1:6390", http1: HTTP1NetHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := EdgeConfig(8080, 9090, [3]int{3001, 3002, 3003}, "gitlab-jwt.pub", "https://gitlab.example.com", "gitlab-authz-token", "k1", EdgeOptions{Agents: tt.agents, HTTP1: tt.http1})
			cfg, err := config.Parse([]byte(data), "edge.yaml", dir)
			if err != nil {
				t.Fatalf("edge rejects the config: %v\n%s", err, data)
			}
			wantHTTP1 := tt.http1
			if wantHTTP1 == "" {
				wantHTTP1 = config.HTTP1Edge // edge's default, which the config leaves alone
			}
			if cfg.Listen.HTTP1 != wantHTTP1 {
				t.Errorf("listen.http1: got %q, want %q", cfg.Listen.HTTP1, wantHTTP1)
			}
			if got := len(cfg.Agents.Keys); got != tt.agentKeys {
				t.Errorf("agent keys: got %d, want %d", got, tt.agentKeys)
			}
			if cfg.Listen.Internal != tt.internal {
				t.Errorf("internal listener: got %q, want %q", cfg.Listen.Internal, tt.internal)
			}
			if tt.internal != "" && cfg.Listen.AdvertiseInternal != "http://"+tt.internal {
				t.Errorf("advertise_internal: got %q, want http://%s", cfg.Listen.AdvertiseInternal, tt.internal)
			}
			gotRedis := ""
			if cfg.Registry != nil {
				gotRedis = cfg.Registry.Redis.Addr
			}
			if gotRedis != tt.redis {
				t.Errorf("registry redis: got %q, want %q", gotRedis, tt.redis)
			}
			if got, want := cfg.GitLabAPI != nil, tt.agents.APISecretFile != ""; got != want {
				t.Errorf("gitlab_api set: got %v, want %v", got, want)
			}
			// Issue 18's goals are stated with edge's access log on, its default.
			if !cfg.Log.AccessLog() || cfg.Log.Access != nil || cfg.Log.Level != "info" {
				t.Errorf("log: got level %q access %v (set: %v), want info with the access log on by default",
					cfg.Log.Level, cfg.Log.AccessLog(), cfg.Log.Access != nil)
			}
		})
	}
}

// TestNginxConfig asks nginx itself whether the generated config is valid, when nginx is here.
func TestNginxConfig(t *testing.T) {
	cfg := NginxConfig("/tmp/p", 8080, 3001)
	for _, want := range []string{"keepalive 64;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`, "access_log off;", "worker_processes 1;", "listen 127.0.0.1:8080;", "server 127.0.0.1:3001;",
		// The transfer case's 10 MiB upload passes, streamed; downloads stay in memory.
		"client_max_body_size 0;", "proxy_request_buffering off;", "proxy_max_temp_file_size 0;"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("nginx config lacks %q", want)
		}
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
		if _, err := os.Stat(nginx); err != nil {
			t.Fatal("nginx not installed: make test installs it (apt-get install nginx-light)")
		}
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(NginxConfig(dir, 8080, 3001)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf).CombinedOutput(); err != nil {
		t.Errorf("nginx -t: %v\n%s", err, out)
	}
}
