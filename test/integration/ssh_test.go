package integration

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// sshEnv is edges with listen.ssh in front of a real sshd behind an agent.
type sshEnv struct {
	ws      *sshWorkspace
	c       *tunnelCluster
	edges   []*edgeProc
	sshAddr []string
	authz   string
	tokens  map[string]string // user -> token
	hostKey string            // what the authorizer says the workspace's host key is
}

func newSSHEnv(t *testing.T, n int) *sshEnv {
	t.Helper()
	e := &sshEnv{ws: startSSHWorkspace(t), tokens: map[string]string{"alice": randomKubeToken(t), "bob": randomKubeToken(t)}}
	e.hostKey = e.ws.HostKey
	e.c = newTunnelCluster(t, 0)
	e.authz = filepath.Join(e.c.dir, "workspaces.yaml")
	e.writeAuthz(t, []string{"alice"})
	edgeKey, _ := generateSSHKey(t, e.c.dir, "edge_host")
	secret := filepath.Join(e.c.dir, "ws.secret")
	writeFile(t, secret, []byte(strings.Repeat("s", 40)))
	for range n {
		cfg := e.c.newEdgeConfig()
		if n == 1 {
			cfg.Registry, cfg.Internal, cfg.Listen.Internal = nil, nil, ""
		}
		cfg.Listen.SSH = freeAddr(t)
		cfg.Workspaces = &workspacesConfig{
			Domain: "ws.test",
			OIDC: oidcConfig{Issuer: "https://login.test", ClientID: "edge", ClientSecretFile: secret,
				RedirectURL: "https://auth.ws.test/oauth/callback"},
			Authorizer: authorizerConfig{File: e.authz},
			Session:    sessionConfig{KeyFile: secret, Recheck: "1s"},
			SSH:        &wsSSHConfig{HostKeyFile: edgeKey, ClientKeyFile: e.ws.ClientKeyFile},
		}
		e.sshAddr = append(e.sshAddr, cfg.Listen.SSH)
		e.edges = append(e.edges, startEdge(t, cfg))
		e.c.edges = append(e.c.edges, e.edges[len(e.edges)-1])
	}
	up := &upstream{agent: "a1", Port: e.ws.Port}
	e.c.startAgent("a1", e.edges[0].PublicURL, up)
	if n > 1 {
		e.c.waitHeld(t, "a1", e.edges[0], 15*time.Second)
	} else {
		poll.Until(t, 15*time.Second, "the agent", func() bool {
			conns, err := e.c.connections(e.edges[0], "a1")
			return err == nil && len(conns) > 0
		})
	}
	return e
}

// writeAuthz writes the static authorizer: workspace "alice" with its sshd, for users.
func (e *sshEnv) writeAuthz(t *testing.T, users []string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "workspaces:\n  - name: alice\n    agent_id: a1\n    users: [%s]\n    ssh: {port: %d, user: %s, host_key: %q}\n",
		strings.Join(users, ", "), e.ws.Port, e.ws.User, e.hostKey)
	b.WriteString("  - {name: other, agent_id: a1, users: [bob]}\nusers:\n")
	for name, tok := range e.tokens {
		sum := sha256.Sum256([]byte(tok))
		fmt.Fprintf(&b, "  - {name: %s, token_sha256: %s}\n", name, hex.EncodeToString(sum[:]))
	}
	tmp := e.authz + ".new"
	writeFile(t, tmp, []byte(b.String()))
	os.Rename(tmp, e.authz)
}

type wsSSHConfig struct {
	HostKeyFile   string `yaml:"host_key_file"`
	ClientKeyFile string `yaml:"client_key_file"`
}

func TestSSHIntoWorkspace(t *testing.T) {
	t.Parallel()
	e := newSSHEnv(t, 1)
	c := newSSHClient(t, e.sshAddr[0], "alice", e.tokens["alice"])

	t.Run("exec and exit status", func(t *testing.T) {
		if out, _, code := c.run(t, "echo hi"); out != "hi\n" || code != 0 {
			t.Errorf("echo hi: %q exit %d", out, code)
		}
		if _, _, code := c.run(t, "exit 3"); code != 3 {
			t.Errorf("exit 3: exit %d", code)
		}
	})
	t.Run("AES-GCM only between user and edge", func(t *testing.T) {
		verbose := newSSHClient(t, e.sshAddr[0], "alice", e.tokens["alice"], withSSHOptions("-v"))
		_, errOut, code := verbose.run(t, "true")
		if code != 0 || !strings.Contains(errOut, "kex: server->client cipher: aes128-gcm@openssh.com") {
			t.Errorf("ssh -v with OpenSSH's defaults: exit %d, want 0 and aes128-gcm negotiated:\n%s", code, errOut)
		}
		chacha := newSSHClient(t, e.sshAddr[0], "alice", e.tokens["alice"],
			withSSHOptions("-v", "-o", "Ciphers=chacha20-poly1305@openssh.com"))
		_, errOut, code = chacha.run(t, "true")
		if code != 255 || !strings.Contains(errOut, "no matching cipher found") {
			t.Errorf("a client with chacha20-poly1305 only: exit %d, want 255 and no matching cipher:\n%s", code, errOut)
		}
	})
	t.Run("interactive shell sees window-change", func(t *testing.T) {
		p := c.interactive(t)
		defer p.close()
		// Output, not the typed command: the terminal echoes what is typed before ssh has even
		// logged in.
		p.send(t, "stty size; echo ready=$((6*7))\n")
		p.waitFor(t, "ready=42", 20*time.Second)
		p.resize(t, 100, 30)
		p.send(t, "stty size\n")
		p.waitFor(t, "30 100", 20*time.Second)
	})
	t.Run("scp 100 MiB each way", func(t *testing.T) {
		dir := t.TempDir()
		src := filepath.Join(dir, "up.bin")
		f, _ := os.Create(src)
		h := sha256.New()
		io.CopyN(io.MultiWriter(f, h), rand.Reader, 100<<20)
		f.Close()
		want := hex.EncodeToString(h.Sum(nil))
		remote := filepath.Join(t.TempDir(), "remote.bin")
		start := time.Now()
		if out, err := c.scp(t, src, "REMOTE:"+remote); err != nil {
			t.Fatalf("scp up: %v %s", err, out)
		}
		t.Logf("100 MiB up in %v", time.Since(start).Round(time.Millisecond))
		back := filepath.Join(dir, "down.bin")
		if out, err := c.scp(t, "REMOTE:"+remote, back); err != nil {
			t.Fatalf("scp down: %v %s", err, out)
		}
		for _, p := range []string{remote, back} {
			if got := fileSHA(t, p); got != want {
				t.Errorf("%s: sha256 %s, want %s", p, got, want)
			}
		}
	})
	t.Run("sftp", func(t *testing.T) {
		dir := t.TempDir()
		local := filepath.Join(dir, "f.txt")
		writeFile(t, local, []byte("sftp through edge\n"))
		remoteDir := t.TempDir()
		out, err := c.sftp(t, fmt.Sprintf("cd %s\nput %s\nls\nget f.txt %s\n", remoteDir, local, filepath.Join(dir, "g.txt")))
		if err != nil || !strings.Contains(out, "f.txt") {
			t.Fatalf("sftp: %v %s", err, out)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "g.txt")); string(b) != "sftp through edge\n" {
			t.Errorf("sftp get: %q", b)
		}
	})
	t.Run("ssh -L to a port in the workspace", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { io.Copy(conn, conn); conn.Close() }()
			}
		}()
		local := freeAddr(t)
		stop := c.forward(t, local, ln.Addr().String())
		defer stop()
		conn, err := net.Dial("tcp", local)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte("through the forward\n"))
		buf := make([]byte, 64)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.ReadAtLeast(conn, buf, len("through the forward\n"))
		if string(buf[:n]) != "through the forward\n" {
			t.Errorf("forwarded echo: %q", buf[:n])
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tt := range []struct{ name, user, token string }{
			{"wrong token", "alice", "not-the-token"},
			{"a user without access", "alice", e.tokens["bob"]},
			{"an unknown workspace", "nope", e.tokens["alice"]},
		} {
			bad := newSSHClient(t, e.sshAddr[0], tt.user, tt.token)
			if out, stderr, code := bad.run(t, "echo hi"); code == 0 || out != "" {
				t.Errorf("%s: exit %d %q %q, want refused", tt.name, code, out, stderr)
			}
		}
		if strings.Contains(e.edges[0].out.String(), e.tokens["alice"]) || strings.Contains(e.edges[0].out.String(), e.tokens["bob"]) {
			t.Errorf("edge logged a token")
		}
	})
	t.Run("revoked access closes an open session", func(t *testing.T) {
		p := c.interactive(t)
		defer p.close()
		// Logged in before access is revoked: waiting for the typed command, which the terminal
		// echoes at once, let the revocation refuse the login itself ("Permission denied").
		p.send(t, "echo open=$((6*7))\n")
		p.waitFor(t, "open=42", 20*time.Second)
		e.writeAuthz(t, []string{"carol"})
		p.waitFor(t, "revoked", 20*time.Second)
		p.waitExit(t, 20*time.Second)
		e.writeAuthz(t, []string{"alice"})
	})
	t.Run("too many attempts are rate limited", func(t *testing.T) {
		for range 12 {
			bad := newSSHClient(t, e.sshAddr[0], "alice", "wrong")
			bad.run(t, "true")
		}
		if n, err := metricSum(e.edges[0].OpsURL+"/metrics", "edge_ssh_logins_total", `outcome="rate_limited"`); err != nil || n < 1 {
			t.Errorf("rate limited logins: %v %v", n, err)
		}
	})
}

// TestSSHHostKeyChangedAndOtherEdge: a workspace whose sshd shows another host key than the
// authorizer's is refused with an alarm; with the agent held by another edge, SSH works the same.
func TestSSHHostKeyChangedAndOtherEdge(t *testing.T) {
	t.Parallel()
	e := newSSHEnv(t, 2)
	c := newSSHClient(t, e.sshAddr[1], "alice", e.tokens["alice"])
	if out, _, code := c.run(t, "echo via-edge-1"); out != "via-edge-1\n" || code != 0 {
		t.Fatalf("through edge 1 to the agent on edge 0: %q exit %d", out, code)
	}
	_, other := generateSSHKey(t, t.TempDir(), "other")
	e.hostKey = other
	e.writeAuthz(t, []string{"alice"})
	poll.Until(t, 10*time.Second, "the host key mismatch to be refused", func() bool {
		_, _, code := newSSHClient(t, e.sshAddr[0], "alice", e.tokens["alice"]).run(t, "true")
		return code != 0 && strings.Contains(e.edges[0].out.String(), "ALARM")
	})
}

func fileSHA(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil))
}

var _ = exec.Command

// TestSSHDrain: on SIGTERM edge stops taking SSH logins, an open session goes on within
// shutdown.grace, and is closed when the grace is over.
func TestSSHDrain(t *testing.T) {
	t.Parallel()
	e := newSSHEnv(t, 1)
	c := newSSHClient(t, e.sshAddr[0], "alice", e.tokens["alice"])
	p := c.interactive(t)
	defer p.close()
	p.send(t, "echo open=$((6*7))\n")
	p.waitFor(t, "open=42", 20*time.Second)
	start := time.Now()
	if err := e.edges[0].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "new SSH logins to be refused", func() bool {
		conn, err := net.DialTimeout("tcp", e.sshAddr[0], time.Second)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})
	p.send(t, "echo still=$((7*7))\n")
	p.waitFor(t, "still=49", 10*time.Second)
	p.waitExit(t, 30*time.Second)
	if d := time.Since(start); d < 4*time.Second {
		t.Errorf("the session was closed %v after SIGTERM, before the 5 s grace", d)
	}
	if code, err := e.edges[0].wait(30 * time.Second); err != nil || code != 0 {
		t.Errorf("edge exit: %d %v", code, err)
	}
}
