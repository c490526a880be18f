package workspaceauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// Static is both an Authorizer and a Directory.
func TestStaticInterfaces(t *testing.T) {
	var s any = &Static{}
	if _, ok := s.(Authorizer); !ok {
		t.Errorf("*Static is not an Authorizer")
	}
	if _, ok := s.(Directory); !ok {
		t.Errorf("*Static is not a Directory")
	}
}

const (
	staticAliceSum = "9c220f200955d76c0a38d308225e0ef10c5f971acaf2f8d1d8f732affa5bd1dc" // SHA-256 of "alice-token"
	staticBobSum   = "97dd3707015dcf069cf73022ed7173b1165db6eff24b441cb57fd069a8c4e525" // SHA-256 of "bob-token"
	staticHostKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVTe0zmSLlBOdOrVRw8OeeRzE3n1Y6rP4E6fzjXtJ9g"
)

const staticGood = `# the demo file
workspaces:
  - name: ws-alice
    agent_id: a1
    users: [alice, "sub-42"]
    ssh: {port: 60022, user: gitlab-workspaces, host_key: "` + staticHostKey + `"}
  - name: ws-bob
    agent_id: agent.b_2-x
    users: [bob]
  - name: ws-nobody
    agent_id: a3
users:
  - {name: alice, token_sha256: "` + staticAliceSum + `"}
  - {name: bob, token_sha256: "` + staticBobSum + `"}
`

func writeStatic(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "workspaces.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newTestStatic(t *testing.T, content string) *Static {
	t.Helper()
	s, err := NewStatic(writeStatic(t, content), nil)
	if err != nil {
		t.Fatalf("NewStatic: %v", err)
	}
	return s
}

func TestStaticAuthorize(t *testing.T) {
	s := newTestStatic(t, staticGood)
	alice := User{ID: "sub-1", Username: "alice"}
	tests := []struct {
		name      string
		user      User
		workspace string
		port      int
		want      Decision
		wantErr   error
	}{
		{"by username", alice, "ws-alice", 60001, Decision{Allowed: true, AgentID: "a1", WorkspaceID: "ws-alice"}, nil},
		{"any port", alice, "ws-alice", 1, Decision{Allowed: true, AgentID: "a1", WorkspaceID: "ws-alice"}, nil},
		{"by ID", User{ID: "sub-42", Username: "carol"}, "ws-alice", 8080, Decision{Allowed: true, AgentID: "a1", WorkspaceID: "ws-alice"}, nil},
		{"other agent", User{Username: "bob"}, "ws-bob", 80, Decision{Allowed: true, AgentID: "agent.b_2-x", WorkspaceID: "ws-bob"}, nil},
		{"not listed", alice, "ws-bob", 80, Decision{}, nil},
		{"nobody listed", alice, "ws-nobody", 80, Decision{}, nil},
		{"empty user", User{}, "ws-alice", 80, Decision{}, nil},
		{"username case matters", User{Username: "Alice"}, "ws-alice", 80, Decision{}, nil},
		{"unknown workspace", alice, "ws-carol", 80, Decision{}, ErrNotFound},
		{"workspace is matched exactly", alice, "WS-ALICE", 80, Decision{}, ErrNotFound},
		{"empty workspace", alice, "", 80, Decision{}, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Authorize(t.Context(), tt.user, tt.workspace, tt.port)
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("error: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestStaticDirectory(t *testing.T) {
	s := newTestStatic(t, staticGood)
	lookups := []struct {
		workspace string
		agent     string
		ok        bool
	}{
		{"ws-alice", "a1", true},
		{"ws-nobody", "a3", true},
		{"ws-carol", "", false},
	}
	for _, tt := range lookups {
		t.Run("lookup "+tt.workspace, func(t *testing.T) {
			agent, ok := s.Lookup(tt.workspace)
			if agent != tt.agent || ok != tt.ok {
				t.Errorf("Lookup: got %q %v, want %q %v", agent, ok, tt.agent, tt.ok)
			}
		})
	}

	sshs := []struct {
		workspace string
		want      SSHTarget
		ok        bool
	}{
		{"ws-alice", SSHTarget{Port: 60022, User: "gitlab-workspaces", HostKey: staticHostKey}, true},
		{"ws-bob", SSHTarget{}, false},
		{"ws-carol", SSHTarget{}, false},
	}
	for _, tt := range sshs {
		t.Run("ssh "+tt.workspace, func(t *testing.T) {
			got, ok := s.SSH(tt.workspace)
			if got != tt.want || ok != tt.ok {
				t.Errorf("SSH: got %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}

	tokens := []struct {
		name string
		sum  string
		user string
		ok   bool
	}{
		{"alice", staticAliceSum, "alice", true},
		{"upper case", strings.ToUpper(staticBobSum), "bob", true},
		{"unknown", strings.Repeat("0", 64), "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tokens {
		t.Run("token "+tt.name, func(t *testing.T) {
			user, ok := s.UserForToken(tt.sum)
			if user != tt.user || ok != tt.ok {
				t.Errorf("UserForToken: got %q %v, want %q %v", user, ok, tt.user, tt.ok)
			}
		})
	}
}

func TestStaticAccepts(t *testing.T) {
	tests := []struct {
		name    string
		content string
	}{
		{"no workspaces", "workspaces: []\n"},
		{"users only", "users:\n  - {name: alice, token_sha256: " + strings.ToUpper(staticAliceSum) + "}\n"},
		{"63 character name, 64 character agent", "workspaces:\n  - {name: " + strings.Repeat("a", 63) + ", agent_id: " + strings.Repeat("A", 64) + "}\n"},
		{"numeric user", "workspaces:\n  - {name: w, agent_id: a, users: [1234]}\n"},
		{"null ssh", "workspaces:\n  - {name: w, agent_id: a, ssh: null}\n"},
		{"host key with comment", "workspaces:\n  - {name: w, agent_id: a, ssh: {port: 1, user: u, host_key: \"" + staticHostKey + " root@ws\"}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewStatic(writeStatic(t, tt.content), nil); err != nil {
				t.Errorf("NewStatic: got %v, want no error", err)
			}
		})
	}
}

func TestStaticRejects(t *testing.T) {
	ws := func(entry string) string { return "workspaces:\n  - {name: ok, agent_id: a1}\n  - " + entry + "\n" }
	user := func(entry string) string { return "users:\n  - " + entry + "\n" }
	ssh := func(s string) string { return ws("{name: w, agent_id: a, ssh: " + s + "}") }
	tests := []struct {
		name    string
		content string
		want    []string // in the error message
	}{
		{"unknown top-level key", "workspaces: []\nadmins: [alice]\n", []string{"line 2", "admins"}},
		{"unknown workspace key", ws("{name: w, agent_id: a, user: [alice]}"), []string{"line 3", "user"}},
		{"unknown ssh key", ssh("{port: 22, user: u, host_key: \"" + staticHostKey + "\", password: x}"), []string{"line 3", "password"}},
		{"unknown user key", user("{name: alice, token: secret}"), []string{"line 2", "token"}},
		{"wrong type", "workspaces: {name: w}\n", []string{"line 1"}},
		{"not YAML", "workspaces: [\n", []string{"line"}},
		{"empty file", "", []string{"empty file"}},
		{"comments only", "# nothing yet\n", []string{"empty file"}},
		{"two documents", "workspaces: []\n---\nworkspaces: []\n", []string{"more than one"}},

		{"no name", ws("{agent_id: a}"), []string{"line 3", "workspaces[1]", "DNS label"}},
		{"upper-case name", ws("{name: WS, agent_id: a}"), []string{"line 3", "\"WS\"", "DNS label"}},
		{"leading dash", ws("{name: -w, agent_id: a}"), []string{"DNS label"}},
		{"trailing dash", ws("{name: w-, agent_id: a}"), []string{"DNS label"}},
		{"dot in name", ws("{name: w.x, agent_id: a}"), []string{"DNS label"}},
		{"64 character name", ws("{name: " + strings.Repeat("a", 64) + ", agent_id: a}"), []string{"DNS label"}},
		{"duplicate name", ws("{name: ok, agent_id: a2}"), []string{"line 3", "used twice"}},
		{"no agent", ws("{name: w}"), []string{"line 3", "agent_id"}},
		{"65 character agent", ws("{name: w, agent_id: " + strings.Repeat("a", 65) + "}"), []string{"agent_id"}},
		{"slash in agent", ws("{name: w, agent_id: a/b}"), []string{"agent_id \"a/b\""}},
		{"empty user name", ws("{name: w, agent_id: a, users: [alice, \"\"]}"), []string{"line 3", "empty name"}},

		{"ssh port 0", ssh("{port: 0, user: u, host_key: \"" + staticHostKey + "\"}"), []string{"line 3", "port 0"}},
		{"ssh port too big", ssh("{port: 65536, user: u, host_key: \"" + staticHostKey + "\"}"), []string{"port 65536"}},
		{"ssh no user", ssh("{port: 22, host_key: \"" + staticHostKey + "\"}"), []string{"user \"\""}},
		{"ssh user with space", ssh("{port: 22, user: a b, host_key: \"" + staticHostKey + "\"}"), []string{"user \"a b\""}},
		{"ssh no host key", ssh("{port: 22, user: u}"), []string{"host_key"}},
		{"ssh host key without type", ssh("{port: 22, user: u, host_key: AAAAC3NzaC1lZDI1NTE5}"), []string{"host_key"}},
		{"ssh host key not base64", ssh("{port: 22, user: u, host_key: \"ssh-ed25519 not*base64\"}"), []string{"not base64"}},

		{"user without name", user("{token_sha256: " + staticAliceSum + "}"), []string{"line 2", "users[0]", "name: required"}},
		{"short token hash", user("{name: alice, token_sha256: " + staticAliceSum[1:] + "}"), []string{"line 2", "64 hexadecimal"}},
		{"token hash not hex", user("{name: alice, token_sha256: " + strings.Repeat("g", 64) + "}"), []string{"64 hexadecimal"}},
		{"duplicate user", user("{name: alice, token_sha256: " + staticAliceSum + "}\n  - {name: alice, token_sha256: " + staticBobSum + "}"), []string{"line 3", "used twice"}},
		{"duplicate token", user("{name: alice, token_sha256: " + staticAliceSum + "}\n  - {name: bob, token_sha256: " + strings.ToUpper(staticAliceSum) + "}"), []string{"line 3", "another user's"}},
		{"every problem", ws("{name: W, agent_id: a/b}") + user("{name: alice}"), []string{"line 3", "DNS label", "agent_id", "line 5", "64 hexadecimal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeStatic(t, tt.content)
			s, err := NewStatic(path, nil)
			if err == nil {
				t.Fatalf("NewStatic: got no error, want one")
			}
			if s != nil {
				t.Errorf("NewStatic: got a *Static with the error")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	t.Run("token hash is not quoted back", func(t *testing.T) {
		_, err := NewStatic(writeStatic(t, user("{name: alice, token_sha256: glpat-secret}")), nil)
		if err == nil || strings.Contains(err.Error(), "glpat-secret") {
			t.Errorf("error: got %v, want one without the value", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := NewStatic(filepath.Join(t.TempDir(), "absent.yaml"), nil)
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error: got %v, want os.ErrNotExist", err)
		}
	})
}

// staticLogs is a slog.Handler that hands each record to the test, so it can wait for "reloaded"
// or "bad file" instead of sleeping.
type staticLogs chan slog.Record

func (c staticLogs) Enabled(context.Context, slog.Level) bool      { return true }
func (c staticLogs) Handle(_ context.Context, r slog.Record) error { c <- r; return nil }
func (c staticLogs) WithAttrs([]slog.Attr) slog.Handler            { return c }
func (c staticLogs) WithGroup(string) slog.Handler                 { return c }

// waitLog reads records until one at level whose message contains msg.
func (c staticLogs) waitLog(t *testing.T, level slog.Level, msg string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-c:
			if r.Level == level && strings.Contains(r.Message, msg) {
				return
			}
		case <-deadline:
			t.Fatalf("no %v log containing %q", level, msg)
		}
	}
}

func staticWaitAgent(t *testing.T, s *Static, workspace, want string) {
	t.Helper()
	poll.UntilState(t, 10*time.Second, fmt.Sprintf("Lookup(%q) to give %q", workspace, want), func() (bool, string) {
		got, _ := s.Lookup(workspace)
		return got == want, fmt.Sprintf("got %q", got)
	})
}

func staticFileFor(agent string) string {
	return "workspaces:\n  - {name: ws-alice, agent_id: " + agent + ", users: [alice]}\n"
}

// replace swaps the file for a new one by rename, as editors and kubelet do.
func staticReplace(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func startStatic(t *testing.T, path string) (*Static, staticLogs) {
	t.Helper()
	logs := make(staticLogs, 100)
	s, err := NewStatic(path, slog.New(logs))
	if err != nil {
		t.Fatalf("NewStatic: %v", err)
	}
	logs.waitLog(t, slog.LevelInfo, "loaded")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		s.Run(ctx, time.Millisecond)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		// Run keeps logging into logs until it returns; drain so it cannot block.
		for {
			select {
			case <-done:
				return
			case <-logs:
			}
		}
	})
	return s, logs
}

func TestStaticRun(t *testing.T) {
	path := writeStatic(t, staticFileFor("a1"))
	s, logs := startStatic(t, path)

	// In place: the poll may catch the file empty or half written, and must end on the whole.
	if err := os.WriteFile(path, []byte(staticFileFor("a2")), 0o600); err != nil {
		t.Fatal(err)
	}
	staticWaitAgent(t, s, "ws-alice", "a2")

	staticReplace(t, path, staticFileFor("a3"))
	logs.waitLog(t, slog.LevelInfo, "reloaded")
	staticWaitAgent(t, s, "ws-alice", "a3")

	// A bad file is logged, and the table in use stays.
	staticReplace(t, path, "workspaces:\n  - {name: ws-alice, agent_id: a4, user: [alice]}\n")
	logs.waitLog(t, slog.LevelError, "bad file")
	if got, _ := s.Lookup("ws-alice"); got != "a3" {
		t.Errorf("agent after a bad file: got %q, want %q", got, "a3")
	}
	if d, err := s.Authorize(t.Context(), User{Username: "alice"}, "ws-alice", 1); !d.Allowed || err != nil {
		t.Errorf("Authorize after a bad file: got %+v %v, want allowed", d, err)
	}
	if err := s.Reload(); err == nil {
		t.Errorf("Reload of a bad file: got no error")
	}

	// So does a missing one.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	logs.waitLog(t, slog.LevelError, "cannot read")
	if got, _ := s.Lookup("ws-alice"); got != "a3" {
		t.Errorf("agent without a file: got %q, want %q", got, "a3")
	}

	// Revoking access: alice is no longer listed.
	staticReplace(t, path, "workspaces:\n  - {name: ws-alice, agent_id: a5, users: [bob]}\n")
	logs.waitLog(t, slog.LevelInfo, "reloaded")
	if d, err := s.Authorize(t.Context(), User{Username: "alice"}, "ws-alice", 1); d.Allowed || err != nil {
		t.Errorf("Authorize after revoking: got %+v %v, want denied", d, err)
	}
}

// Kubernetes mounts a ConfigMap as symlinks: name -> ..data/name, ..data -> ..<timestamp>, and
// updates it by renaming a new ..data symlink over the old one.
func TestStaticRunConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, content string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "workspaces.yaml"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2025_01_01_00_00_00.1", staticFileFor("a1"))
	path := filepath.Join(dir, "workspaces.yaml")
	if err := os.Symlink(filepath.Join("..data", "workspaces.yaml"), path); err != nil {
		t.Fatal(err)
	}
	s, logs := startStatic(t, path)

	version("..2025_01_01_00_00_00.2", staticFileFor("a2"))
	logs.waitLog(t, slog.LevelInfo, "reloaded")
	staticWaitAgent(t, s, "ws-alice", "a2")
}

func TestStaticReload(t *testing.T) {
	path := writeStatic(t, staticFileFor("a1"))
	s, err := NewStatic(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(staticFileFor("a2")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got, _ := s.Lookup("ws-alice"); got != "a2" {
		t.Errorf("agent: got %q, want %q", got, "a2")
	}
	if err := os.WriteFile(path, []byte("workspaces: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil {
		t.Errorf("Reload of a bad file: got no error")
	}
	if got, _ := s.Lookup("ws-alice"); got != "a2" {
		t.Errorf("agent after a bad reload: got %q, want %q", got, "a2")
	}
}
