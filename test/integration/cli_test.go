package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/tokens"
)

// runEdge runs the edge binary with args and returns its stdout, stderr and exit code.
func runEdge(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(edgeBinaryPath(), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run edge %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestExplain: `edge explain` prints the cell and the rule for one request, sends nothing and
// never prints the token.
func TestExplain(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	var cells []*cellsim.Server
	for _, id := range []uint64{1, 2, 3} {
		s, err := cellsim.NewServer("", cellsim.Options{CellID: id, Legacy: id == 1})
		if err != nil {
			t.Fatalf("cell: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		cells = append(cells, s)
		cfg.Cells = append(cfg.Cells, cellConfig{ID: id, URL: s.URL, Legacy: id == 1, IDRanges: cellRanges(id)})
	}
	cfg.Listen = listenConfig{Public: "127.0.0.1:0", Ops: "127.0.0.1:0"}
	path := writeConfig(t, cfg)

	now := time.Now()
	jwt, err := tokens.MintJobJWT(tokens.MintJobOptions{
		Key: demoPrivateKey(t), Algorithm: "RS256", KID: jwtKID, Issuer: jwtIssuer, Audience: jwtAudience,
		Keys: tokens.Keys{}.Set(tokens.KeyCell, 3), JobID: 42, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
	})
	if err != nil {
		t.Fatalf("MintJobJWT: %v", err)
	}
	runner2 := runnerToken(t, 2)
	runner3 := runnerToken(t, 3)
	tests := []struct {
		name     string
		args     []string
		token    string
		wantCell float64
		wantRule string
	}{
		{"RUNNER-TOKEN", []string{"-X", "POST", "-H", "RUNNER-TOKEN: " + runner2, "http://edge.example.com/api/v4/jobs/request"}, runner2, 2, "routable_token_cell"},
		{"token in a JSON body", []string{"-X", "POST", "-H", "Content-Type: application/json", "-d", `{"token":"` + runner3 + `"}`, "http://edge.example.com/api/v4/runners/verify"}, runner3, 3, "routable_token_cell"},
		{"job JWT", []string{"-X", "PUT", "-H", "JOB-TOKEN: glcbt-" + jwt, "http://edge.example.com/api/v4/jobs/42"}, jwt, 3, "job_token_cell"},
		{"job id range", []string{"-X", "PATCH", "http://edge.example.com/api/v4/jobs/4000001/trace"}, "", 3, "job_id_range"},
		{"unknown token", []string{"-X", "POST", "-H", "RUNNER-TOKEN: glrt-a1b2c3d4e5f6g7h8i9j0", "http://edge.example.com/api/v4/runners/verify"}, "glrt-a1b2c3d4e5f6g7h8i9j0", 1, "legacy_cell"},
		{"not runner traffic", []string{"http://edge.example.com/explore"}, "", 1, "not_runner_traffic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runEdge(t, append([]string{"explain", "--config", path}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit code: got %d, want 0\n%s%s", code, stdout, stderr)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, stdout)
			}
			if got["cell"] != tt.wantCell || got["rule"] != tt.wantRule {
				t.Errorf("decision: got cell %v rule %v, want cell %v rule %v\n%s", got["cell"], got["rule"], tt.wantCell, tt.wantRule, stdout)
			}
			if tt.token != "" && leakedPart(tt.token, stdout+stderr) != "" {
				t.Errorf("explain printed part of the token")
			}
		})
	}
	for _, c := range cells {
		if n := len(c.Records()); n != 0 {
			t.Errorf("explain sent %d request(s) to cell %d", n, c.ID())
		}
	}
}

// TestTokenDecode runs `edge token decode` on the vectors of tokens.md: keys as JSON, exit 0,
// and never the token or its random part.
func TestTokenDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		token        string
		wantKind     string
		wantRoutable bool
		wantKeys     map[string]float64
	}{
		{"glrt-t2_AAECAwQFBgcICQoLDA0OD2M6MgpnOnlhCm86MQp1OjE2EQ.01.1a0uul4cy", "routable", true, map[string]float64{"c": 2, "g": 1234, "o": 1, "u": 42}},
		{"glpat-AAECAwQFBgcICQoLDA0OD2M6MQpvOjEKdToxNgw.01.130ncaeak", "routable", true, map[string]float64{"c": 1, "o": 1, "u": 42}},
		{"glrt-t3_AAECAwQFBgcICQoLDA0OD2M6MwpvOjUKcDpycwp1OjcQ.01.180xv8zww", "routable", true, map[string]float64{"c": 3, "o": 5, "p": 1000, "u": 7}},
		{"EL25d_AKXDUtqLnIQHEpkG86MQM.01.0r1ajj2i3", "routable", true, map[string]float64{"o": 1}},
		{"glrt-t2_AAECAwQFBgcICQoLDA0OD2M6MgpnOnlhCm86MQp1OjE2EQ.01.1a0uul4cz", "legacy", false, nil},
		{"glrt-0123456789abcdefghij", "legacy", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			stdout, stderr, code := runEdge(t, "token", "decode", tt.token)
			if code != 0 {
				t.Fatalf("exit code: got %d, want 0\n%s", code, stderr)
			}
			var got struct {
				Kind     string             `json:"kind"`
				Routable bool               `json:"routable"`
				Keys     map[string]float64 `json:"keys"`
			}
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, stdout)
			}
			if got.Kind != tt.wantKind || got.Routable != tt.wantRoutable || !sameKeys(got.Keys, tt.wantKeys) {
				t.Errorf("got kind %q routable %v keys %v, want %q %v %v", got.Kind, got.Routable, got.Keys, tt.wantKind, tt.wantRoutable, tt.wantKeys)
			}
			if leakedPart(tt.token, stdout+stderr) != "" {
				t.Errorf("decode printed a piece of the token")
			}
		})
	}
}

// leakedPart returns a 12-character piece of token found in out, or "". A prefix alone (at most
// 8 characters here) is not secret.
func leakedPart(token, out string) string {
	const window = 12
	for i := 0; i+window <= len(token); i++ {
		if strings.Contains(out, token[i:i+window]) {
			return token[i : i+window]
		}
	}
	return ""
}

func sameKeys(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCheckBadConfig: `edge check` exits 2 and lists every problem with its line.
func TestCheckBadConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "edge.yaml")
	config := `listen:
  public: "127.0.0.1:8080"
  bogus: 1
cells:
  - {id: 1, url: "http://127.0.0.1:3001", legacy: true, id_ranges: ["1-100"]}
  - {id: 2, url: "not a url", id_ranges: ["50-200"]}
routing:
  long_poll_timeout: "soon"
tokens:
  job_jwt:
    verify: true
    on_invalid: maybe
    keys: [{kid: k1, alg: RS256, file: missing.pub}]
    audience: gitlab-authz-token
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatalf("write config: %v", err)
	}
	stdout, stderr, code := runEdge(t, "check", "--config", path)
	if code != 2 {
		t.Errorf("exit code: got %d, want 2", code)
	}
	out := stdout + stderr
	for _, want := range []struct{ line, path string }{
		{"3", "listen.bogus"},
		{"6", "cells[1].url"},
		{"6", "cells[1].id_ranges"},
		{"8", "routing.long_poll_timeout"},
		{"12", "tokens.job_jwt.on_invalid"},
		{"13", "tokens.job_jwt.keys[0].file"},
	} {
		if !strings.Contains(out, path+":"+want.line+": "+want.path) {
			t.Errorf("no problem reported for %s at line %s", want.path, want.line)
		}
	}
	if t.Failed() {
		t.Logf("edge check output:\n%s", out)
	}

	good := writeConfig(t, func() edgeConfig {
		c := baseConfig()
		c.Listen = listenConfig{Public: "127.0.0.1:0", Ops: "127.0.0.1:0"}
		c.Cells = []cellConfig{{ID: 1, URL: "http://127.0.0.1:3001", Legacy: true}}
		return c
	}())
	if stdout, stderr, code := runEdge(t, "check", "--config", good); code != 0 {
		t.Errorf("check of a good config: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestVersionFlags: `edge --version`, `-version` and `-v` print what `edge version` prints.
func TestVersionFlags(t *testing.T) {
	t.Parallel()
	want, stderr, code := runEdge(t, "version")
	if code != 0 || !strings.HasPrefix(want, "edge ") {
		t.Fatalf("edge version: exit %d, output %q%s", code, want, stderr)
	}
	for _, flag := range []string{"--version", "-version", "-v"} {
		t.Run(flag, func(t *testing.T) {
			got, stderr, code := runEdge(t, flag)
			if code != 0 || got != want {
				t.Errorf("edge %s: exit %d, output %q%s; want exit 0, %q", flag, code, got, stderr, want)
			}
		})
	}
}

// TestHelp: --help on every command and subcommand prints its usage and exits 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"-h"},
		{"serve", "--help"}, {"agent", "--help"}, {"check", "--help"}, {"explain", "--help"},
		{"version", "--help"},
		{"token", "--help"}, {"token", "mint", "--help"}, {"token", "mint", "-h"},
		{"token", "mint", "routable", "--help"}, {"token", "mint", "job", "--help"},
		{"token", "mint", "agent", "--help"}, {"token", "mint", "gitlab-api", "--help"},
		{"token", "decode", "--help"},
	} {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runEdge(t, args...)
			if code != 0 {
				t.Errorf("edge %s: exit %d, want 0\n%s%s", name, code, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, "Usage") {
				t.Errorf("edge %s: no usage printed:\n%s%s", name, stdout, stderr)
			}
		})
	}
}

// writeFileT writes a file under dir and returns its path.
func writeFileT(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	return p
}

// TestCellsOnlyConfig: listen and cells are a whole config (no tokens section: the job-JWT rule
// is off); `edge check` passes it and `edge serve` starts with it.
func TestCellsOnlyConfig(t *testing.T) {
	t.Parallel()
	public, ops := freeAddr(t), freeAddr(t)
	path := writeFileT(t, t.TempDir(), "edge.yaml", fmt.Sprintf(`listen: {public: %q, ops: %q}
cells:
  - {id: 1, url: "http://127.0.0.1:3001", legacy: true}
`, public, ops))
	if stdout, stderr, code := runEdge(t, "check", "--config", path); code != 0 || !strings.Contains(stdout, ": ok") {
		t.Fatalf("edge check: exit %d\n%s%s", code, stdout, stderr)
	}
	e := &edgeProc{PublicURL: "http://" + public, OpsURL: "http://" + ops, ConfigPath: path}
	e.process = startProcess(t, "edge ("+path+")", exec.Command(edgeBinaryPath(), "serve", "--config", path))
	if err := e.waitReady(20 * time.Second); err != nil {
		t.Fatalf("edge serve: %v", err)
	}
}

// TestCheckRegistryTTLAlone: registry.refresh defaults from registry.ttl (4/5 of it), so a short
// ttl alone passes.
func TestCheckRegistryTTLAlone(t *testing.T) {
	t.Parallel()
	root, _ := repoRoot()
	path := writeFileT(t, t.TempDir(), "edge.yaml", fmt.Sprintf(`listen:
  public: "127.0.0.1:0"
  ops: "127.0.0.1:0"
  internal: "127.0.0.1:0"
  advertise_internal: "http://127.0.0.1:8081"
cells:
  - {id: 1, url: "http://127.0.0.1:3001", legacy: true}
internal: {secret_file: %q}
registry:
  redis: {addr: "127.0.0.1:6379"}
  ttl: 5s
`, filepath.Join(root, "examples", "secrets", "internal.key")))
	if stdout, stderr, code := runEdge(t, "check", "--config", path); code != 0 {
		t.Errorf("edge check: exit %d, want 0\n%s%s", code, stdout, stderr)
	}
}

// TestAgentTokenFile: `edge agent` refuses a missing or empty token file at once (exit 2,
// naming the file), before dialing; `edge check --agent` reads it too.
func TestAgentTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.tok")
	empty := writeFileT(t, dir, "empty.tok", "\n")
	for _, tt := range []struct{ name, file, reason string }{
		{"missing", missing, "does not exist"},
		{"empty", empty, "is empty"},
		{"a directory", dir, "cannot read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Port 1 on loopback: nothing listens, so a dial would fail slowly with retries, not exit 2.
			stdout, stderr, code := runEdge(t, "agent", "--edge", "http://127.0.0.1:1", "--token-file", tt.file, "--allow-port", "3000")
			if code != 2 {
				t.Errorf("exit code: got %d, want 2", code)
			}
			if out := stdout + stderr; !strings.Contains(out, tt.file) || !strings.Contains(out, tt.reason) {
				t.Errorf("output names no file %s and reason %q:\n%s", tt.file, tt.reason, out)
			}
		})
	}
	t.Run("check --agent", func(t *testing.T) {
		cfg := writeFileT(t, dir, "agent.yaml", "edge: http://127.0.0.1:8080\ntoken_file: missing.tok\nallow_ports: [3000]\n")
		stdout, stderr, code := runEdge(t, "check", "--agent", "--config", cfg)
		if out := stdout + stderr; code != 2 || !strings.Contains(out, missing) {
			t.Errorf("edge check --agent: exit %d, want 2 naming %s:\n%s", code, missing, out)
		}
	})
}

// TestCheckAgentExample: examples/agent.yaml passes `edge check --agent`.
func TestCheckAgentExample(t *testing.T) {
	t.Parallel()
	root, _ := repoRoot()
	path := filepath.Join(root, "examples", "agent.yaml")
	stdout, stderr, code := runEdge(t, "check", "--agent", "--config", path)
	if code != 0 || !strings.Contains(stdout, path+": ok") {
		t.Errorf("edge check --agent: exit %d\n%s%s", code, stdout, stderr)
	}
}
