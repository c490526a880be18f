package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// client runs OpenSSH's ssh and scp against 127.0.0.1:port as user, with no user or system
// ssh_config and no agent, accepting only the given host key; with a key file it logs in with the
// key, otherwise with a password an SSH_ASKPASS script prints (the password stays in a file).
type client struct {
	port       int
	user       string
	extra      []string // more options
	knownHosts string
	keyFile    string
	askpass    string
}

func newClient(dir string, port int, user, hostKey, keyFile, password string) (*client, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	c := &client{port: port, user: user, knownHosts: filepath.Join(dir, "known_hosts"), keyFile: keyFile}
	if err := os.WriteFile(c.knownHosts, []byte(fmt.Sprintf("[127.0.0.1]:%d %s\n", port, hostKey)), 0o600); err != nil {
		return nil, err
	}
	if keyFile == "" {
		pw := filepath.Join(dir, "password")
		if err := os.WriteFile(pw, []byte(password), 0o600); err != nil {
			return nil, err
		}
		c.askpass = filepath.Join(dir, "askpass")
		if err := os.WriteFile(c.askpass, []byte("#!/bin/sh\nexec cat '"+pw+"'\n"), 0o700); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *client) options() []string {
	o := []string{
		"-F", "/dev/null",
		"-o", "UserKnownHostsFile=" + c.knownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UpdateHostKeys=no",
		"-o", "BatchMode=no",
		"-o", "ConnectTimeout=10",
		"-o", "NumberOfPasswordPrompts=1",
		"-o", "IdentityAgent=none",
		"-o", "ControlMaster=no",
		"-o", "ControlPath=none",
		"-o", "Compression=no",
		"-o", "LogLevel=ERROR",
		"-o", "KbdInteractiveAuthentication=no",
	}
	o = append(o, c.extra...)
	if c.keyFile != "" {
		return append(o, "-o", "PubkeyAuthentication=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+c.keyFile,
			"-o", "PreferredAuthentications=publickey", "-o", "PasswordAuthentication=no")
	}
	return append(o, "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
		"-o", "PasswordAuthentication=yes")
}

func (c *client) env() []string {
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

// ssh runs `ssh [flags] user@127.0.0.1 remote...` with stdin empty; flags come before the options
// (ssh keeps the first value of an option: -v then wins over LogLevel=ERROR).
func (c *client) ssh(ctx context.Context, flags []string, remote ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args := append(slices.Clone(flags), "-p", strconv.Itoa(c.port))
	args = append(args, c.options()...)
	args = append(args, "--", c.user+"@127.0.0.1")
	cmd := exec.CommandContext(ctx, "ssh", append(args, remote...)...)
	cmd.Env = c.env()
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
