package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// sshd is the workspace's OpenSSH server.
type sshd struct {
	port          int
	user          string
	hostKey       string // authorized_keys format
	clientKeyFile string // the key edge (and the direct client) logs in with
	proc          *bench.Proc
}

// startSSHD runs /usr/sbin/sshd -D -e with a generated config, as test/integration's
// startSSHWorkspace does, and returns once it listens.
func startSSHD(ctx context.Context, sup *bench.Supervisor, dir string) (*sshd, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	// sshd chroots its unprivileged pre-authentication child here; the package makes it at boot.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, fmt.Errorf("privilege separation directory: %w", err)
	}
	me, err := user.Current()
	if err != nil {
		return nil, err
	}
	hostKeyFile, hostKey, err := sshKeygen(ctx, dir, "host_ed25519")
	if err != nil {
		return nil, err
	}
	clientKeyFile, clientKey, err := sshKeygen(ctx, dir, "client_ed25519")
	if err != nil {
		return nil, err
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, []byte(clientKey+"\n"), 0o600); err != nil {
		return nil, err
	}
	port, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	config := []string{
		"Port " + strconv.Itoa(port), // before ListenAddress, which takes the port from it
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
		"PrintMotd no",
		"PrintLastLog no",
		"UseDNS no",
		// DEBUG1 before authentication logs the algorithms edge negotiates with sshd; after it,
		// sshd's session process would send its debug lines to the client's stderr.
		"LogLevel DEBUG1",
		"MaxStartups 100",
		"MaxSessions 100",
		"Match all",
		"LogLevel INFO",
	}
	configFile := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(configFile, []byte(strings.Join(config, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	p, err := sup.Start("sshd", []string{"/usr/sbin/sshd", "-D", "-e", "-f", configFile}, bench.StartOptions{})
	if err != nil {
		return nil, err
	}
	// sshd -e logs this once its socket listens (a probe connection would be a failed login).
	want := fmt.Sprintf("Server listening on 127.0.0.1 port %d", port)
	if err := p.WaitReady(ctx, 10*time.Second, func() (bool, error) { return strings.Contains(p.Output(), want), nil }); err != nil {
		return nil, fmt.Errorf("sshd not listening: %w\n%s", err, p.Tail(4000))
	}
	return &sshd{port: port, user: me.Username, hostKey: hostKey, clientKeyFile: clientKeyFile, proc: p}, nil
}

// sshKeygen makes an ed25519 key pair in dir and returns the private key's path and the public key
// in authorized_keys format without a comment.
func sshKeygen(ctx context.Context, dir, name string) (privateFile, public string, err error) {
	privateFile = filepath.Join(dir, name)
	if out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", privateFile).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("ssh-keygen: %w\n%s", err, out)
	}
	pub, err := os.ReadFile(privateFile + ".pub")
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(string(pub))
	if len(f) < 2 {
		return "", "", fmt.Errorf("ssh-keygen wrote %q", pub)
	}
	return privateFile, f[0] + " " + f[1], nil
}
