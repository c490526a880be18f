// Command sshbench measures SSH into a workspace through edge against SSH straight to the
// workspace's sshd: scp throughput each way (MB/s, and the ratio through edge / direct) and the
// latency of `ssh ... true` (wall time of a whole login, command and exit), in interleaved rounds.
//
// It starts, on 127.0.0.1 only, a real OpenSSH sshd (generated config and keys), edge (built with
// `go build ./cmd/edge`; listen.ssh, the static workspace authorizer, workspaces.ssh) and
// `edge agent --allow-port <sshd port>`. Direct: ssh/scp log in to sshd with the key edge uses, as
// sshd's user. Through edge: ssh/scp log in to edge as the workspace with a personal access token
// as the password (given by an SSH_ASKPASS script); edge opens its own SSH connection to sshd
// through the agent's tunnel.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
	"gitlab.com/edge/edge/tokens"
)

func main() {
	size := flag.Int("size", 256, "size of the file scp copies each way, MiB")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	n := flag.Int("n", 10, "ssh ... true runs each way per round (latency)")
	keep := flag.Bool("keep", false, "keep the temporary directory (configs, keys, logs)")
	flag.Parse()
	if *size < 1 || *rounds < 1 || *n < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err := run(ctx, *size, *rounds, *n, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sshbench:", err)
		if ctx.Err() != nil {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

// path is one way to the workspace's sshd.
type path struct {
	name string
	c    *client
}

type transfer struct {
	mbps     float64 // over the whole scp, login included
	dataMBps float64 // in the data phase
	wall     time.Duration
	cpu      [4]time.Duration // by cpuParts
}

// cpuParts are the processes whose CPU a transfer counts.
var cpuParts = [4]string{
	"client (scp + ssh)",
	"sshd (its processes for the connection)",
	"edge",
	"agent",
}

func run(ctx context.Context, sizeMiB, rounds, n int, keep bool) error {
	for _, tool := range []string{"/usr/sbin/sshd", "ssh", "scp", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (make deps: openssh-server): %v", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "sshbench-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var procs procSet
	defer procs.stopAll()

	bin := filepath.Join(dir, "edge")
	fmt.Fprintln(os.Stderr, "building edge")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/edge").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}

	// The workspace's sshd.
	ws, err := startSSHD(ctx, &procs, filepath.Join(dir, "sshd"))
	if err != nil {
		return err
	}

	// edge.
	edgeDir := filepath.Join(dir, "edge.d")
	if err := os.Mkdir(edgeDir, 0o700); err != nil {
		return err
	}
	edgeHostKeyFile, edgeHostKey, err := sshKeygen(edgeDir, "host_ed25519")
	if err != nil {
		return err
	}
	token := randomHex(24)
	sum := sha256.Sum256([]byte(token))
	public, ops, sshPort := freePort(), freePort(), freePort()
	agentKey, apiKey := []byte(randomHex(32)), []byte(randomHex(32))
	files := map[string]string{
		"agent.key": string(agentKey), "api.key": string(apiKey),
		"session.key": randomHex(32), "oidc.secret": randomHex(32),
		// The SSH user is the workspace; the password a personal access token of one of its users.
		"workspaces.yaml": fmt.Sprintf("workspaces:\n  - name: bench\n    agent_id: a1\n    users: [bench]\n    ssh: {port: %d, user: %s, host_key: %q}\nusers:\n  - {name: bench, token_sha256: %s}\n",
			ws.port, ws.user, ws.hostKey, hex.EncodeToString(sum[:])),
		// OIDC is required by the workspaces section but unused by SSH: discovery happens on the
		// first browser login, which never comes.
		"edge.yaml": fmt.Sprintf(`listen: {public: "127.0.0.1:%d", ops: "127.0.0.1:%d", ssh: "127.0.0.1:%d"}
cells: [{id: 1, url: "http://127.0.0.1:9", legacy: true}]
agents: {keys: [{alg: HS256, file: agent.key}]}
gitlab_api: {secret_file: api.key}
workspaces:
  domain: ws.localhost
  insecure_http: true
  oidc: {issuer: "https://login.invalid", client_id: edge, client_secret_file: oidc.secret, redirect_url: "http://auth.ws.localhost/oauth/callback"}
  authorizer: {file: workspaces.yaml}
  session: {key_file: session.key}
  ssh: {host_key_file: %q, client_key_file: %q}
log: {level: warn, format: text}
`, public, ops, sshPort, edgeHostKeyFile, ws.clientKeyFile),
	}
	now := time.Now()
	agentToken, err := tokens.MintAgentToken(tokens.MintAgentOptions{Key: agentKey, Algorithm: "HS256",
		Audience: tokens.DefaultAgentAudience, AgentID: "a1", IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour)})
	if err != nil {
		return err
	}
	files["a1.tok"] = agentToken
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(edgeDir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	edge, err := procs.start("edge", filepath.Join(dir, "edge.log"), bin, "serve", "--config", filepath.Join(edgeDir, "edge.yaml"))
	if err != nil {
		return err
	}
	edgeURL := fmt.Sprintf("http://127.0.0.1:%d", public)
	if err := waitFor(ctx, 30*time.Second, func() bool {
		return httpStatus(fmt.Sprintf("http://127.0.0.1:%d/readyz", ops)) == 200
	}); err != nil {
		return fmt.Errorf("edge not ready: %w\n%s", err, edge.tail())
	}
	agent, err := procs.start("agent", filepath.Join(dir, "agent.log"), bin, "agent", "--edge", edgeURL,
		"--token-file", filepath.Join(edgeDir, "a1.tok"), "--allow-port", strconv.Itoa(ws.port), "--log-level", "warn")
	if err != nil {
		return err
	}
	apiToken, err := tokens.MintGitLabAPIToken(apiKey, "gitlab", "gitlab-kas", now, 24*time.Hour)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return agentConnected(edgeURL, apiToken) }); err != nil {
		return fmt.Errorf("the agent did not connect: %w\nedge:\n%s\nagent:\n%s", err, edge.tail(), agent.tail())
	}

	clientDir := filepath.Join(dir, "client")
	if err := os.Mkdir(clientDir, 0o700); err != nil {
		return err
	}
	direct, err := newClient(filepath.Join(clientDir, "direct"), ws.port, ws.user, ws.hostKey, ws.clientKeyFile, "")
	if err != nil {
		return err
	}
	through, err := newClient(filepath.Join(clientDir, "edge"), sshPort, "bench", edgeHostKey, "", token)
	if err != nil {
		return err
	}
	// OpenSSH 9.2's client prefers sntrup761x25519-sha512, which edge's SSH server (Go's
	// x/crypto/ssh) does not offer: through edge the client gets curve25519-sha256. The third
	// latency case is the direct login with that key exchange, to tell edge's cost from the
	// key exchange's.
	directX := *direct
	directX.extra = []string{"-o", "KexAlgorithms=curve25519-sha256"}
	paths := []path{{"direct to sshd", direct}, {"through edge", through}}
	latPaths := []path{paths[0], paths[1], {"direct to sshd, curve25519-sha256", &directX}}
	notes := make([]string, len(latPaths))
	for i, p := range latPaths {
		before := len(ws.proc.output())
		out, stderr, err := p.c.ssh(ctx, []string{"-v"}, "echo", "ok")
		if err != nil || out != "ok\n" {
			return fmt.Errorf("%s: ssh echo ok: %v %q\n%s\nedge:\n%s\nagent:\n%s\nsshd:\n%s", p.name, err, out, stderr,
				edge.tail(), agent.tail(), ws.proc.tail())
		}
		// The measured runs write nothing: no prompt, banner or server log line.
		if out, stderr, err := p.c.ssh(ctx, nil, "true"); err != nil || out != "" || stderr != "" {
			return fmt.Errorf("%s: ssh true: %v, stdout %q, stderr %q", p.name, err, out, stderr)
		}
		notes[i] = p.name + ": the client negotiated " + negotiated(stderr)
		if i == 1 {
			// sshd (LogLevel DEBUG1) logs what edge's client negotiated with it.
			time.Sleep(200 * time.Millisecond)
			notes[i] += "; edge with sshd: " + negotiated(ws.proc.output()[before:])
		}
	}

	// The file scp copies: random bytes, so no layer can compress it.
	src := filepath.Join(dir, "src.bin")
	want, err := writeRandom(src, int64(sizeMiB)<<20)
	if err != nil {
		return err
	}
	remoteDir := filepath.Join(dir, "remote")
	localDir := filepath.Join(dir, "local")
	for _, d := range []string{remoteDir, localDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	// The CPU of the server side: sshd's listener with its reaped children (each connection's
	// sshd processes, which have exited and been waited for by then), edge, the agent.
	serverCPU := func() [4]time.Duration {
		var v [4]time.Duration
		v[1], _ = cpuWithChildren(ws.proc.cmd.Process.Pid)
		v[2], _ = cpuWithChildren(edge.cmd.Process.Pid)
		v[3], _ = cpuWithChildren(agent.cmd.Process.Pid)
		return v
	}
	bytesN := float64(int64(sizeMiB) << 20)

	up := make([][]transfer, len(paths))
	down := make([][]transfer, len(paths))
	lat := make([][]time.Duration, len(latPaths))
	for r := range rounds {
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			p := paths[i]
			remote := filepath.Join(remoteDir, "up.bin")
			local := filepath.Join(localDir, "down.bin")
			for _, dirn := range []string{"up", "down"} {
				from, to, check := src, "REMOTE:"+remote, remote
				if dirn == "down" {
					from, to, check = "REMOTE:"+remote, local, local
				}
				cpu0 := serverCPU()
				res, out, err := p.c.scp(ctx, from, to, check, int64(bytesN))
				if err != nil {
					return fmt.Errorf("%s: scp %s: %v\n%s\nedge:\n%s\nagent:\n%s", p.name, dirn, err, out, edge.tail(), agent.tail())
				}
				// Let sshd's listener reap the connection's processes, whose CPU it then counts.
				time.Sleep(300 * time.Millisecond)
				t := transfer{mbps: bytesN / res.wall.Seconds() / 1e6, wall: res.wall,
					dataMBps: float64(res.dataBytes) / res.data.Seconds() / 1e6}
				cpu1 := serverCPU()
				t.cpu[0] = res.cpu
				for k := 1; k < len(t.cpu); k++ {
					t.cpu[k] = cpu1[k] - cpu0[k]
				}
				if got, err := fileSHA(check); err != nil || got != want {
					return fmt.Errorf("%s: scp %s: %s has sha256 %s (%v), want %s", p.name, dirn, check, got, err, want)
				}
				fmt.Fprintf(os.Stderr, "round %d %s scp %s: %.1f MB/s in the data phase, %.1f MB/s over the whole scp (%s); CPU client %s, sshd %s, edge %s, agent %s\n",
					r+1, p.name, dirn, t.dataMBps, t.mbps, res.wall.Round(time.Millisecond), t.cpu[0], t.cpu[1], t.cpu[2], t.cpu[3])
				if dirn == "up" {
					up[i] = append(up[i], t)
				} else {
					down[i] = append(down[i], t)
				}
			}
			os.Remove(remote)
			os.Remove(local)
		}
		for k := range n {
			for j := range latPaths {
				i := (j + k + r) % len(latPaths) // rotate the order
				start := time.Now()
				out, stderr, err := latPaths[i].c.ssh(ctx, nil, "true")
				d := time.Since(start)
				if err != nil {
					return fmt.Errorf("%s: ssh true: %v %q %s", latPaths[i].name, err, out, stderr)
				}
				lat[i] = append(lat[i], d)
			}
		}
		msg := fmt.Sprintf("round %d ssh true, medians of %d:", r+1, n)
		for i, p := range latPaths {
			msg += fmt.Sprintf(" %s %s;", p.name, medianDur(lat[i][len(lat[i])-n:]).Round(10*time.Microsecond))
		}
		fmt.Fprintln(os.Stderr, msg)
	}

	report(os.Stdout, sizeMiB, rounds, n, notes, up, down, lat)
	return nil
}

func report(w io.Writer, sizeMiB, rounds, n int, notes []string, up, down [][]transfer, lat [][]time.Duration) {
	stat := func(ts []transfer, f func(transfer) float64) (med, min float64) {
		v := make([]float64, len(ts))
		for i, t := range ts {
			v[i] = f(t)
		}
		return median(v), slices.Min(v)
	}
	data := func(t transfer) float64 { return t.dataMBps }
	whole := func(t transfer) float64 { return t.mbps }
	gib := float64(int64(sizeMiB)<<20) / (1 << 30)
	perGiB := func(ts []transfer, f func(transfer) time.Duration) float64 {
		med, _ := stat(ts, func(t transfer) float64 { return f(t).Seconds() / gib })
		return med
	}
	ratios := map[string]float64{}
	fmt.Fprintf(w, "| case | direct to sshd | through edge | through edge vs direct |\n|---|---|---|---|\n")
	for _, c := range []struct {
		name string
		ts   [][]transfer
	}{{"upload", up}, {"download", down}} {
		d, dmin := stat(c.ts[0], data)
		e, emin := stat(c.ts[1], data)
		ratios[c.name] = e / d
		fmt.Fprintf(w, "| scp %s %d MiB: MB/s in the data phase (slowest) | %.0f (%.0f) | %.0f (%.0f) | **%.2fx** |\n", c.name, sizeMiB, d, dmin, e, emin, e/d)
		d, _ = stat(c.ts[0], whole)
		e, _ = stat(c.ts[1], whole)
		fmt.Fprintf(w, "| scp %s: MB/s over the whole scp, login included | %.0f | %.0f | %.2fx |\n", c.name, d, e, e/d)
		total := func(t transfer) time.Duration { return t.cpu[0] + t.cpu[1] + t.cpu[2] + t.cpu[3] }
		fmt.Fprintf(w, "| scp %s: CPU s per GiB, all processes | %.2f | %.2f | %.2fx |\n", c.name,
			perGiB(c.ts[0], total), perGiB(c.ts[1], total), perGiB(c.ts[1], total)/perGiB(c.ts[0], total))
		for k, part := range cpuParts {
			f := func(t transfer) time.Duration { return t.cpu[k] }
			dc := fmt.Sprintf("%.2f", perGiB(c.ts[0], f))
			if k >= 2 {
				dc = ""
			}
			fmt.Fprintf(w, "| scp %s: CPU s per GiB, %s | %s | %.2f | |\n", c.name, part, dc, perGiB(c.ts[1], f))
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
	latCell := func(v []time.Duration) string {
		return fmt.Sprintf("%s (%s-%s)", ms(medianDur(v)), ms(slices.Min(v)), ms(slices.Max(v)))
	}
	d, e, dx := medianDur(lat[0]), medianDur(lat[1]), medianDur(lat[2])
	fmt.Fprintf(w, "| `ssh ... true`: median wall (fastest-slowest) | %s | %s | %+.1f ms |\n", latCell(lat[0]), latCell(lat[1]), float64(e-d)/1e6)
	fmt.Fprintf(w, "| `ssh ... true`: direct with edge's key exchange (curve25519-sha256) | %s | | %+.1f ms |\n", latCell(lat[2]), float64(e-dx)/1e6)
	met := func(r float64) string {
		if r >= 0.5 {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(w, "\nscp through edge / direct, data phase: upload %.2fx (goal >= 0.5x: %s), download %.2fx (%s). `ssh true` through edge: %+.1f ms against direct with OpenSSH's default key exchange, %+.1f ms against direct with curve25519-sha256 (medians of %d runs each).\n",
		ratios["upload"], met(ratios["upload"]), ratios["download"], met(ratios["download"]), float64(e-d)/1e6, float64(e-dx)/1e6, len(lat[0]))
	fmt.Fprintf(w, "%d rounds, interleaved (the order of the paths alternating); scp of %d MiB of random bytes each way per round; %d `ssh true` each way per round, the order rotating. MB/s are 10^6 bytes/s, medians over the rounds.\n",
		rounds, sizeMiB, n)
	for _, note := range notes {
		fmt.Fprintln(w, note+".")
	}
}

// negotiated is the cipher, MAC and key exchange ssh -v reports.
func negotiated(stderr string) string {
	var kex, cipher string
	for _, line := range strings.Split(stderr, "\n") {
		if _, s, ok := strings.Cut(line, "debug1: kex: algorithm: "); ok {
			kex = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "[preauth]"))
		}
		if _, s, ok := strings.Cut(line, "debug1: kex: server->client cipher: "); ok {
			cipher = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "[preauth]"))
		}
	}
	if cipher == "" {
		return "(not seen in ssh -v)"
	}
	return cipher + ", kex " + kex
}

// sshd is the workspace's OpenSSH server.
type sshd struct {
	port          int
	user          string
	hostKey       string // authorized_keys format
	clientKeyFile string // the key edge (and the direct client) logs in with
	proc          *proc
}

// startSSHD runs /usr/sbin/sshd -D -e with a generated config, as test/integration's
// startSSHWorkspace does, and returns once it listens.
func startSSHD(ctx context.Context, procs *procSet, dir string) (*sshd, error) {
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
	hostKeyFile, hostKey, err := sshKeygen(dir, "host_ed25519")
	if err != nil {
		return nil, err
	}
	clientKeyFile, clientKey, err := sshKeygen(dir, "client_ed25519")
	if err != nil {
		return nil, err
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, []byte(clientKey+"\n"), 0o600); err != nil {
		return nil, err
	}
	port := freePort()
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
	p, err := procs.start("sshd", filepath.Join(dir, "sshd.log"), "/usr/sbin/sshd", "-D", "-e", "-f", configFile)
	if err != nil {
		return nil, err
	}
	// sshd -e logs this once its socket listens (a probe connection would be a failed login).
	want := fmt.Sprintf("Server listening on 127.0.0.1 port %d", port)
	if err := waitFor(ctx, 10*time.Second, func() bool { return strings.Contains(p.output(), want) || p.exited() }); err != nil || p.exited() {
		return nil, fmt.Errorf("sshd not listening: %v\n%s", err, p.tail())
	}
	return &sshd{port: port, user: me.Username, hostKey: hostKey, clientKeyFile: clientKeyFile, proc: p}, nil
}

// sshKeygen makes an ed25519 key pair in dir and returns the private key's path and the public key
// in authorized_keys format without a comment.
func sshKeygen(dir, name string) (privateFile, public string, err error) {
	privateFile = filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", privateFile).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("ssh-keygen: %v\n%s", err, out)
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

// scpResult is one scp's times.
type scpResult struct {
	wall time.Duration // the scp process, its login included
	// data is the data phase: from the first time the destination file was seen with bytes in
	// it to the first time it was seen whole; dataBytes is what it grew by in that time.
	data      time.Duration
	dataBytes int64
	cpu       time.Duration // scp and the ssh it runs
}

// scp copies from to to (an argument "REMOTE:path" is user@127.0.0.1:path; both ends are on this
// machine) and watches dest, which is to be size bytes, grow.
func (c *client) scp(ctx context.Context, from, to, dest string, size int64) (scpResult, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	args := append([]string{"-q", "-P", strconv.Itoa(c.port)}, c.options()...)
	for _, a := range []string{from, to} {
		if rest, ok := strings.CutPrefix(a, "REMOTE:"); ok {
			a = c.user + "@127.0.0.1:" + rest
		}
		args = append(args, a)
	}
	cmd := exec.CommandContext(ctx, "scp", args...)
	cmd.Env = c.env()
	cmd.WaitDelay = 5 * time.Second
	done := make(chan struct{})
	watched := make(chan scpResult, 1)
	go func() {
		// A stat every millisecond: a few microseconds of CPU each.
		var r scpResult
		var first, whole time.Time
		var firstSize int64
		for {
			select {
			case <-done:
				if whole.IsZero() {
					whole = time.Now()
				}
				if !first.IsZero() {
					r.data, r.dataBytes = whole.Sub(first), size-firstSize
				}
				watched <- r
				return
			default:
			}
			if fi, err := os.Stat(dest); err == nil && fi.Size() > 0 {
				now := time.Now()
				if first.IsZero() {
					first, firstSize = now, fi.Size()
				}
				if whole.IsZero() && fi.Size() >= size {
					whole = now
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	close(done)
	r := <-watched
	if err != nil {
		return r, string(out), err
	}
	r.wall = wall
	// wait4's rusage counts scp and its waited-for children (the ssh it runs).
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if r.data <= 0 || r.dataBytes < size/2 {
		return r, string(out), fmt.Errorf("the data phase was not seen (%v, %d bytes): a file too small for the watch", r.data, r.dataBytes)
	}
	return r, string(out), nil
}

// procSet is the long-running processes the bench starts, each in its own process group.
type procSet struct{ procs []*proc }

type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	log  *os.File
	done chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.Write(b)
	if p.out.Len() < 1<<20 {
		p.out.Write(b)
	}
	return len(b), nil
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// tail is the end of the process's output, for errors.
func (p *proc) tail() string {
	s := p.output()
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return s
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (ps *procSet) start(name, logFile string, argv ...string) (*proc, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, log: f, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	ps.procs = append(ps.procs, p)
	return p, nil
}

// stopAll stops the processes, the last started first: SIGTERM to each one's process group,
// SIGKILL after 5 s.
func (ps *procSet) stopAll() {
	for i := len(ps.procs) - 1; i >= 0; i-- {
		p := ps.procs[i]
		pgid := p.cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
		p.log.Close()
	}
}

// cpuWithChildren is the process's user and system time with that of its children it has
// waited for (fields 14-17 of /proc/<pid>/stat), in USER_HZ ticks.
func cpuWithChildren(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var ticks int64
	for _, field := range []int{14, 15, 16, 17} {
		n, err := strconv.ParseInt(string(f[field-3]), 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return bench.TicksToDuration(ticks), nil
}

func agentConnected(edgeURL, apiToken string) bool {
	req, err := http.NewRequest("GET", edgeURL+"/-/api/v1/agents/a1/connections", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body struct {
		Connections []json.RawMessage `json:"connections"`
	}
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&body) == nil && len(body.Connections) > 0
}

func httpStatus(u string) int {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(u)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// writeRandom writes size random bytes to name and returns their sha256.
func writeRandom(name string, size int64) (string, error) {
	f, err := os.Create(name)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, size); err != nil {
		f.Close()
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), f.Close()
}

func fileSHA(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}
