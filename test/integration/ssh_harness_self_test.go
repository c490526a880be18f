package integration

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/testnet"
	"golang.org/x/crypto/ssh"
)

// TestSSHHarness proves the SSH helpers against sshd directly (which takes keys only) and, for
// the password path, against a minimal Go server: what the edge SSH tests build on.
func TestSSHHarness(t *testing.T) {
	start := time.Now()
	w := startSSHWorkspace(t)
	t.Logf("sshd ready in %v", time.Since(start))
	c := newSSHClient(t, w.Addr, w.User, "", withKey(w.ClientKeyFile), withHostKey(w.HostKey))

	t.Run("run", func(t *testing.T) {
		defer logTime(t, time.Now())
		if out, errOut, code := c.run(t, "echo", "hi"); out != "hi\n" || code != 0 {
			t.Errorf("echo hi: got %q exit %d (stderr %q), want \"hi\\n\" exit 0", out, code, errOut)
		}
		if _, _, code := c.run(t, "exit 3"); code != 3 {
			t.Errorf("exit 3: got exit %d, want 3", code)
		}
		if out, _, _ := c.runStdin(t, strings.NewReader("piped"), "cat"); out != "piped" {
			t.Errorf("cat of stdin: got %q, want \"piped\"", out)
		}
	})

	t.Run("host key checked", func(t *testing.T) {
		defer logTime(t, time.Now())
		_, other := generateSSHKey(t, t.TempDir(), "other")
		wrong := newSSHClient(t, w.Addr, w.User, "", withKey(w.ClientKeyFile), withHostKey(other))
		_, errOut, code := wrong.run(t, "true")
		if code != 255 || !strings.Contains(errOut, "Host key verification failed") {
			t.Errorf("with another host key: got exit %d, stderr %q; want 255 and a host key failure", code, errOut)
		}
	})

	local := t.TempDir()
	remote := t.TempDir() // the workspace is this machine
	up := filepath.Join(local, "up.bin")
	data := make([]byte, 10<<20)
	rand.Read(data)
	writeFile(t, up, data)

	for _, mode := range []string{"sftp protocol", "-O"} {
		t.Run("scp "+mode, func(t *testing.T) {
			defer logTime(t, time.Now())
			var flags []string
			if mode == "-O" {
				flags = []string{"-O"}
			}
			there := filepath.Join(remote, "scp"+fmt.Sprint(len(flags)))
			back := filepath.Join(local, "back"+fmt.Sprint(len(flags)))
			if out, err := c.scp(t, append(flags, up, "REMOTE:"+there)...); err != nil {
				t.Fatalf("scp there: %v\n%s", err, out)
			}
			if out, err := c.scp(t, append(flags, "REMOTE:"+there, back)...); err != nil {
				t.Fatalf("scp back: %v\n%s", err, out)
			}
			wantSameFile(t, up, back)
		})
	}

	t.Run("sftp", func(t *testing.T) {
		defer logTime(t, time.Now())
		back := filepath.Join(local, "sftp-back")
		out, err := c.sftp(t, fmt.Sprintf("cd %s\nput %s sftp.bin\nls\nget sftp.bin %s\n", remote, up, back))
		if err != nil {
			t.Fatalf("sftp: %v\n%s", err, out)
		}
		if !strings.Contains(out, "sftp.bin") {
			t.Errorf("sftp ls: sftp.bin not listed in:\n%s", out)
		}
		wantSameFile(t, up, back)
		if out, err := c.sftp(t, "get /nonexistent/file "+back+"\n"); err == nil {
			t.Errorf("sftp get of a missing file: no error\n%s", out)
		}
	})

	t.Run("forward", func(t *testing.T) {
		defer logTime(t, time.Now())
		echo := startTCPEcho(t)
		localAddr := freeAddr(t)
		stop := c.forward(t, localAddr, echo)
		defer stop()
		conn, err := net.DialTimeout("tcp", localAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 5)
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != "ping\n" {
			t.Errorf("through -L: got %q (%v), want \"ping\\n\"", got, err)
		}
	})

	t.Run("pty", func(t *testing.T) {
		defer logTime(t, time.Now())
		p := c.interactive(t)
		defer p.close()
		p.send(t, "stty size; echo tty=$((6*7))\n")
		p.waitFor(t, "tty=42", 15*time.Second)
		if s := p.screen(t); !strings.Contains(s, "24 80") {
			t.Errorf("stty size before resize: want 24 80 on the screen:\n%s", s)
		}
		p.resize(t, 100, 30)
		p.send(t, "stty size\n")
		p.waitFor(t, "30 100", 10*time.Second)
		p.send(t, "exit 7\n")
		if code := p.waitExit(t, 10*time.Second); code != 7 {
			t.Errorf("exit 7 in the shell: ssh exited %d, want 7; screen:\n%s", code, p.screen(t))
		}
	})

	t.Run("password", func(t *testing.T) {
		defer logTime(t, time.Now())
		const token = "glpat-harness-0123456789"
		addr, hostKey, attempts := startPasswordServer(t, token)
		good := newSSHClient(t, addr, "ws-alice", token, withHostKey(hostKey))
		if out, errOut, code := good.run(t, "echo", "hi"); out != "ws-alice ran: echo hi\n" || code != 0 {
			t.Errorf("right token: got %q exit %d (stderr %q)", out, code, errOut)
		}
		// sftp -b sets BatchMode yes, which would turn askpass off; the harness's earlier
		// BatchMode=no wins. This server has no sftp subsystem: the login must succeed and the
		// subsystem request fail.
		if out, err := good.sftp(t, "ls\n"); err == nil || strings.Contains(out, "Permission denied") ||
			!strings.Contains(out, "subsystem request failed") {
			t.Errorf("sftp with the right token: got %v, want a refused subsystem after the login:\n%s", err, out)
		}
		before := attempts.Load()
		bad := newSSHClient(t, addr, "ws-alice", "glpat-wrong", withHostKey(hostKey))
		_, errOut, code := bad.run(t, "echo", "hi")
		if code != 255 || !strings.Contains(errOut, "Permission denied") {
			t.Errorf("wrong token: got exit %d, stderr %q; want 255, Permission denied", code, errOut)
		}
		if n := attempts.Load() - before; n != 1 {
			t.Errorf("wrong token: %d password attempts, want 1", n)
		}
	})
}

func logTime(t *testing.T, start time.Time) { t.Logf("took %v", time.Since(start)) }

func wantSameFile(t *testing.T, a, b string) {
	t.Helper()
	sum := func(path string) [32]byte {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(data)
	}
	if sum(a) != sum(b) {
		t.Errorf("%s and %s differ", a, b)
	}
}

// startTCPEcho is a TCP server on 127.0.0.1 that writes back what it reads.
func startTCPEcho(t *testing.T) string {
	return testnet.ServeRaw(t, func(conn net.Conn) { io.Copy(conn, conn) })
}

// startPasswordServer is an SSH server taking one password, whose sessions answer an exec with
// "<user> ran: <command>" and exit 0. It returns its address, host key and a count of password
// attempts.
func startPasswordServer(t *testing.T, password string) (string, string, *atomic.Int64) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	attempts := &atomic.Int64{}
	config := &ssh.ServerConfig{
		PasswordCallback: func(_ ssh.ConnMetadata, given []byte) (*ssh.Permissions, error) {
			attempts.Add(1)
			if !bytes.Equal(given, []byte(password)) {
				return nil, fmt.Errorf("wrong password")
			}
			return nil, nil
		},
	}
	config.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go servePasswordConn(conn, config)
		}
	}()
	hostKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	return ln.Addr().String(), hostKey, attempts
}

func servePasswordConn(conn net.Conn, config *ssh.ServerConfig) {
	defer conn.Close()
	sc, chans, reqs, err := ssh.NewServerConn(conn, config)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range chReqs {
				var exec struct{ Command string }
				if req.Type != "exec" || ssh.Unmarshal(req.Payload, &exec) != nil {
					req.Reply(false, nil)
					continue
				}
				req.Reply(true, nil)
				fmt.Fprintf(ch, "%s ran: %s\n", sc.User(), exec.Command)
				ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
				return
			}
		}()
	}
}
