package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// demoSSH is the demo workspace's own sshd (when OpenSSH's server is installed) and what edge
// needs to reach it: edge logs in with its client key, verifies the sshd's host key.
type demoSSH struct {
	port          int
	hostKey       string // the sshd's public host key, authorized_keys form
	user          string
	clientKeyFile string
	edgeKeyFile   string // edge's own host key
	token         string // the demo user's personal access token (the SSH password)
}

// startDemoSSHD runs /usr/sbin/sshd on loopback for the demo workspace, or returns nil when it is
// not installed.
func startDemoSSHD(ctx context.Context, dir string) (*demoSSH, error) {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		return nil, nil
	}
	me, err := user.Current()
	if err != nil {
		return nil, err
	}
	os.MkdirAll("/run/sshd", 0o755)
	d := &demoSSH{user: me.Username, token: "glpat-demo-" + hex.EncodeToString(demoSecret()[:8])}
	hostPub, hostFile, err := writeDemoKey(dir, "sshd_host")
	if err != nil {
		return nil, err
	}
	clientPub, clientFile, err := writeDemoKey(dir, "edge_client")
	if err != nil {
		return nil, err
	}
	if _, d.edgeKeyFile, err = writeDemoKey(dir, "edge_host"); err != nil {
		return nil, err
	}
	d.hostKey, d.clientKeyFile = hostPub, clientFile
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, []byte(clientPub+"\n"), 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	config := strings.Join([]string{
		"Port " + strconv.Itoa(d.port), "ListenAddress 127.0.0.1", "HostKey " + hostFile,
		"AuthorizedKeysFile " + authorized, "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no", "PidFile none",
		"Subsystem sftp internal-sftp", "AllowTcpForwarding yes",
	}, "\n") + "\n"
	cfgFile := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgFile, []byte(config), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "/usr/sbin/sshd", "-D", "-e", "-f", cfgFile)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo sshd: %w", err)
	}
	go cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port))); err == nil {
			c.Close()
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("demo sshd did not listen on port %d", d.port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeDemoKey writes a new ed25519 private key (OpenSSH format) and returns its public half.
func writeDemoKey(dir, name string) (public, file string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return "", "", err
	}
	file = filepath.Join(dir, name)
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", "", err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))), file, nil
}

// authorizerEntry is the demo workspace's ssh entry and the demo user's token hash for the static
// authorizer file.
func (d *demoSSH) authorizerEntry() (ssh, users string) {
	sum := sha256.Sum256([]byte(d.token))
	return fmt.Sprintf("    ssh: {port: %d, user: %s, host_key: %q}\n", d.port, d.user, d.hostKey),
		fmt.Sprintf("users:\n  - {name: demo, token_sha256: %s}\n", hex.EncodeToString(sum[:]))
}
