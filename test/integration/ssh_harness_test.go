package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// sshWorkspace is a real OpenSSH sshd on 127.0.0.1, as a workspace runs it: its own config, host
// key, and an authorized_keys holding the key edge logs in with. Stopped when the test ends.
type sshWorkspace struct {
	Port               int
	Addr               string // 127.0.0.1:Port
	HostKey            string // its public host key, authorized_keys format ("ssh-ed25519 AAAA...")
	User               string // the local user edge logs in as (the current user)
	ClientKeyFile      string // private key (OpenSSH format) edge uses; its public half is authorized
	ClientPublicKey    string // that public half, authorized_keys format
	AuthorizedKeysFile string // append lines to authorize more keys; sshd reads it on each login
	Proc               *process
}

// startSSHWorkspace runs /usr/sbin/sshd -D -e with a generated config (extraConfig lines are
// appended to it) and returns once sshd listens.
func startSSHWorkspace(t *testing.T, extraConfig ...string) *sshWorkspace {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Fatalf("sshd not installed (make deps): %v", err)
	}
	// sshd chroots its unprivileged pre-authentication child here; the package makes it at boot.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("privilege separation directory: %v", err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	dir := t.TempDir()
	hostKeyFile, hostKey := generateSSHKey(t, dir, "host_ed25519")
	clientKeyFile, clientKey := generateSSHKey(t, dir, "client_ed25519")
	authorized := filepath.Join(dir, "authorized_keys")
	writeFile(t, authorized, []byte(clientKey+"\n"))

	addr := freeAddr(t)
	_, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	config := []string{
		"Port " + portStr, // before ListenAddress, which takes the port from it
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKeyFile,
		"AuthorizedKeysFile " + authorized,
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"UsePAM no",
		"StrictModes no",
		"PidFile none",
		"Subsystem sftp internal-sftp",
		"AllowTcpForwarding yes",
		"PermitTTY yes",
		"AcceptEnv LANG LC_* EDGE_TEST_*",
		"PrintMotd no",
		"PrintLastLog no",
		"UseDNS no",
		"LogLevel VERBOSE",
		// Tests open many connections and channels at once from one address.
		"MaxStartups 100",
		"MaxSessions 100",
	}
	config = append(config, extraConfig...)
	configFile := filepath.Join(dir, "sshd_config")
	writeFile(t, configFile, []byte(strings.Join(config, "\n")+"\n"))

	w := &sshWorkspace{
		Port: port, Addr: addr, HostKey: hostKey, User: me.Username,
		ClientKeyFile: clientKeyFile, ClientPublicKey: clientKey, AuthorizedKeysFile: authorized,
	}
	w.Proc = startProcess(t, "sshd "+addr, exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", configFile))
	// sshd -e logs this once its socket listens; a probe connection would show up in tests.
	want := "Server listening on 127.0.0.1 port " + portStr
	poll.UntilState(t, 10*time.Second, "sshd to listen", func() (bool, string) {
		out := w.Proc.out.String()
		if strings.Contains(out, want) {
			return true, ""
		}
		select {
		case <-w.Proc.exited:
			t.Fatalf("sshd exited: %v\n%s", w.Proc.waitErr, out)
		default:
		}
		return false, "output:\n" + out
	})
	return w
}

// generateSSHKey makes an ed25519 key pair in dir with ssh-keygen and returns the private key's
// path and the public key in authorized_keys format without a comment.
func generateSSHKey(t *testing.T, dir, name string) (privateFile, public string) {
	t.Helper()
	privateFile = filepath.Join(dir, name)
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", privateFile).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(privateFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(pub))
	if len(fields) < 2 {
		t.Fatalf("ssh-keygen wrote %q", pub)
	}
	return privateFile, fields[0] + " " + fields[1]
}

// sshClient runs OpenSSH's clients (ssh, scp, sftp) against one address as one user. By default
// it logs in with a password given by an SSH_ASKPASS script, offers no keys, asks once, and
// records the server's host key in its own known_hosts on first use.
type sshClient struct {
	host, port, user string
	dir              string
	askpass          string // script printing the password; empty with a key
	keyFile          string
	hostKeyCheck     string // StrictHostKeyChecking
	knownHosts       string
	extra            []string
	timeout          time.Duration
}

type sshClientOption func(*sshClient)

// withKey logs in with this private key instead of a password.
func withKey(keyFile string) sshClientOption {
	return func(c *sshClient) { c.keyFile = keyFile }
}

// withHostKey accepts only this host key (authorized_keys format) from the server.
func withHostKey(publicKey string) sshClientOption {
	return func(c *sshClient) { c.hostKeyCheck = "yes:" + publicKey }
}

// withSSHOptions adds options (such as "-o", "SendEnv=EDGE_TEST_X") to every ssh, scp and sftp.
func withSSHOptions(opts ...string) sshClientOption {
	return func(c *sshClient) { c.extra = append(c.extra, opts...) }
}

func newSSHClient(t *testing.T, addr, user, password string, opts ...sshClientOption) *sshClient {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("ssh client address %q: %v", addr, err)
	}
	c := &sshClient{host: host, port: port, user: user, dir: t.TempDir(), hostKeyCheck: "accept-new", timeout: time.Minute}
	for _, o := range opts {
		o(c)
	}
	c.knownHosts = filepath.Join(c.dir, "known_hosts")
	if key, ok := strings.CutPrefix(c.hostKeyCheck, "yes:"); ok {
		writeFile(t, c.knownHosts, []byte(fmt.Sprintf("[%s]:%s %s\n", host, port, key)))
		c.hostKeyCheck = "yes"
	}
	if c.keyFile == "" {
		// The password stays in a file: not in arguments, environment or logs.
		pwFile := filepath.Join(c.dir, "password")
		writeFile(t, pwFile, []byte(password))
		c.askpass = filepath.Join(c.dir, "askpass")
		if err := os.WriteFile(c.askpass, []byte("#!/bin/sh\nexec cat '"+pwFile+"'\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// options are the -o options every client program gets.
func (c *sshClient) options() []string {
	o := []string{
		"-F", "/dev/null", // no user or system ssh_config
		"-o", "UserKnownHostsFile=" + c.knownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=" + c.hostKeyCheck,
		"-o", "UpdateHostKeys=no",
		"-o", "BatchMode=no", // before sftp's own -b, which would set yes: ssh keeps the first value
		"-o", "ConnectTimeout=10",
		"-o", "NumberOfPasswordPrompts=1",
		"-o", "IdentityAgent=none",
		"-o", "ControlMaster=no",
		"-o", "ControlPath=none",
		"-o", "LogLevel=ERROR",
	}
	if c.keyFile != "" {
		o = append(o, "-o", "PubkeyAuthentication=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+c.keyFile,
			"-o", "PreferredAuthentications=publickey", "-o", "PasswordAuthentication=no")
	} else {
		o = append(o, "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
			"-o", "PasswordAuthentication=yes")
	}
	o = append(o, "-o", "KbdInteractiveAuthentication=no")
	return append(o, c.extra...)
}

func (c *sshClient) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "DISPLAY":
			continue
		}
		env = append(env, kv)
	}
	if c.askpass == "" {
		return append(env, "SSH_ASKPASS_REQUIRE=never")
	}
	return append(env, "SSH_ASKPASS="+c.askpass, "SSH_ASKPASS_REQUIRE=force")
}

func (c *sshClient) destination() string { return c.user + "@" + c.host }

// sshArgs is an ssh command line: options, then the destination and the remote command.
func (c *sshClient) sshArgs(flags []string, remote []string) []string {
	args := append([]string{"-p", c.port}, c.options()...)
	args = append(args, flags...)
	args = append(args, "--", c.destination())
	return append(args, remote...)
}

// command is name (ssh, scp, sftp) with args, killed after the client's timeout.
func (c *sshClient) command(t *testing.T, name string, args ...string) (*exec.Cmd, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(t.Context(), c.timeout)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env()
	cmd.WaitDelay = 5 * time.Second
	return cmd, ctx, cancel
}

// run runs `ssh user@host args...` with stdin empty and returns its output and exit code (255 when
// ssh itself fails, such as a refused login).
func (c *sshClient) run(t *testing.T, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	return c.runStdin(t, nil, args...)
}

// runStdin is run with stdin read from r (nil: empty).
func (c *sshClient) runStdin(t *testing.T, r io.Reader, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	cmd, ctx, cancel := c.command(t, "ssh", c.sshArgs(nil, args)...)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case ctx.Err() != nil:
		t.Fatalf("ssh %v: no exit after %v (stdout %q, stderr %q)", args, c.timeout, out.String(), errOut.String())
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		return out.String(), errOut.String(), exitErr.ExitCode()
	}
	t.Fatalf("ssh %v: %v (stderr %q)", args, err, errOut.String())
	return "", "", -1
}

// start starts `ssh [flags] user@host remote...` in the background (stopped when the test ends), for
// sessions a test cuts or watches; flags are ssh's own, such as "-tt" or "-N".
func (c *sshClient) start(t *testing.T, flags []string, remote ...string) *process {
	t.Helper()
	cmd := exec.Command("ssh", c.sshArgs(flags, remote)...)
	cmd.Env = c.env()
	return startProcess(t, "ssh "+strings.Join(remote, " "), cmd)
}

// scp runs scp with args, where an argument "REMOTE:path" means user@host:path, and returns its
// combined output. OpenSSH 9 copies over the SFTP subsystem; pass "-O" for the old protocol
// (an exec of `scp -t`/`scp -f`).
func (c *sshClient) scp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"-P", c.port}, c.options()...)
	for _, a := range args {
		if rest, ok := strings.CutPrefix(a, "REMOTE:"); ok {
			a = c.destination() + ":" + rest
		}
		full = append(full, a)
	}
	cmd, ctx, cancel := c.command(t, "scp", full...)
	defer cancel()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: no exit after %v: %s", cmd.Args[0], c.timeout, out)
	}
	return string(out), err
}

// sftp runs `sftp -b -` with batch (one command a line) on stdin; sftp stops at the first failing
// command (unless it starts with "-") and exits non-zero.
func (c *sshClient) sftp(t *testing.T, batch string) (string, error) {
	t.Helper()
	args := append([]string{"-P", c.port}, c.options()...)
	args = append(args, "-b", "-", c.destination())
	cmd, ctx, cancel := c.command(t, "sftp", args...)
	defer cancel()
	cmd.Stdin = strings.NewReader(batch)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: no exit after %v: %s", cmd.Args[0], c.timeout, out)
	}
	return string(out), err
}

// forward runs `ssh -N -L local:remoteAddr` (local is a port or host:port on 127.0.0.1) and
// returns once ssh listens on local, which it does only after logging in. stop ends it; so does
// the end of the test.
func (c *sshClient) forward(t *testing.T, local, remoteAddr string) (stop func()) {
	t.Helper()
	if !strings.Contains(local, ":") {
		local = "127.0.0.1:" + local
	}
	p := c.start(t, []string{"-N", "-o", "ExitOnForwardFailure=yes", "-L", local + ":" + remoteAddr})
	// Seen in /proc rather than by connecting: a probe connection would reach the remote end.
	poll.UntilState(t, 15*time.Second, "ssh -L "+local+":"+remoteAddr+" to listen", func() (bool, string) {
		if tcpListening(t, local) {
			return true, ""
		}
		select {
		case <-p.exited:
			t.Fatalf("ssh -L %s:%s exited: %v\n%s", local, remoteAddr, p.waitErr, p.out.String())
		default:
		}
		return false, "output:\n" + p.out.String()
	})
	return func() { p.stop(5 * time.Second) }
}

// tcpListening says whether a socket listens on addr (an IPv4 host:port), from /proc/net/tcp.
func tcpListening(t *testing.T, addr string) bool {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatalf("forward address %q: %v", addr, err)
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	ip := ap.Addr().As4()
	// /proc/net/tcp writes the address as the host-order (little-endian) uint32 in hex.
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port())
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == want && f[3] == "0A" {
			return true
		}
	}
	return false
}

// ptySession is an interactive ssh in a terminal: a private tmux server running ssh -tt in a
// detached window. The window stays after ssh exits, so its last screen and exit status remain.
type ptySession struct {
	socket    string
	exitFile  string
	closeOnce sync.Once
}

// interactive opens a login shell through a real pty of 80x24.
func (c *sshClient) interactive(t *testing.T) *ptySession {
	t.Helper()
	return c.interactiveCommand(t)
}

// interactiveCommand is interactive with a remote command instead of the login shell.
func (c *sshClient) interactiveCommand(t *testing.T, remote ...string) *ptySession {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	writeFile(t, conf, []byte("set -g remain-on-exit on\nset -g history-limit 10000\nset -g status off\n"))
	p := &ptySession{socket: filepath.Join(dir, "tmux.sock"), exitFile: filepath.Join(dir, "exit")}
	// ssh's status goes to a file, not through tmux: a pane's status is lost when ssh, as the
	// pty's session leader, is hung up as it exits (tmux 3.3 then shows none).
	quoted := []string{"ssh"}
	for _, a := range c.sshArgs([]string{"-tt"}, remote) {
		quoted = append(quoted, shellQuote(a))
	}
	quoted = append(quoted, ";", "echo", "$?", ">", shellQuote(p.exitFile))
	args := []string{"-S", p.socket, "-f", conf, "new-session", "-d", "-s", "s", "-x", "80", "-y", "24"}
	for _, kv := range c.env() {
		if strings.HasPrefix(kv, "SSH_ASKPASS") {
			args = append(args, "-e", kv)
		}
	}
	cmd := exec.Command("tmux", append(args, strings.Join(quoted, " "))...)
	cmd.Env = c.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(p.close)
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (p *ptySession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

// send types text; each "\n" in it is the Enter key.
func (p *ptySession) send(t *testing.T, text string) {
	t.Helper()
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			p.keys(t, "Enter")
		}
		if line != "" {
			if _, err := p.tmux("send-keys", "-t", "s", "-l", line); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// keys presses tmux keys by name: "Enter", "C-c", "C-d", "Up".
func (p *ptySession) keys(t *testing.T, names ...string) {
	t.Helper()
	if _, err := p.tmux(append([]string{"send-keys", "-t", "s"}, names...)...); err != nil {
		t.Fatal(err)
	}
}

// state is the screen with its scrollback, and whether ssh has exited and how.
func (p *ptySession) state() (screen string, dead bool, status int, err error) {
	out, err := p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "s", ";",
		"display-message", "-p", "-t", "s", "@@#{pane_dead} #{pane_dead_status}")
	if err != nil {
		return out, false, 0, err
	}
	i := strings.LastIndex(out, "@@")
	if i < 0 {
		return out, false, 0, fmt.Errorf("tmux state: %q", out)
	}
	if !strings.HasPrefix(out[i+2:], "1") {
		return out[:i], false, 0, nil
	}
	code, err := os.ReadFile(p.exitFile)
	if err != nil {
		return out[:i], false, 0, fmt.Errorf("the pane ended without ssh's status: %w", err)
	}
	status, err = strconv.Atoi(strings.TrimSpace(string(code)))
	return out[:i], true, status, err
}

// screen is what the terminal shows, with its scrollback.
func (p *ptySession) screen(t *testing.T) string {
	t.Helper()
	s, _, _, err := p.state()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor waits until text is on the screen (typed text is echoed there too: wait for output
// that differs from the command, as `echo $((6*7))` for 42).
func (p *ptySession) waitFor(t *testing.T, text string, timeout time.Duration) {
	t.Helper()
	poll.UntilState(t, timeout, fmt.Sprintf("%q on the screen", text), func() (bool, string) {
		s, dead, status, err := p.state()
		switch {
		case err != nil:
			t.Fatal(err)
		case strings.Contains(s, text):
			return true, ""
		case dead:
			t.Fatalf("ssh exited (%d) without showing %q; screen:\n%s", status, text, s)
		}
		return false, "screen:\n" + s
	})
}

// waitExit waits until ssh exits and returns its exit status.
func (p *ptySession) waitExit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	var status int
	poll.UntilState(t, timeout, "ssh to exit", func() (bool, string) {
		s, dead, st, err := p.state()
		if err != nil {
			t.Fatal(err)
		}
		status = st
		return dead, "screen:\n" + s
	})
	return status
}

// resize changes the terminal's size; ssh sends the remote a window-change.
func (p *ptySession) resize(t *testing.T, cols, rows int) {
	t.Helper()
	if _, err := p.tmux("resize-window", "-t", "s", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows)); err != nil {
		t.Fatal(err)
	}
}

// close ends ssh and the tmux server.
func (p *ptySession) close() {
	p.closeOnce.Do(func() { _, _ = p.tmux("kill-server") })
}
