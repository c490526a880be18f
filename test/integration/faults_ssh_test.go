package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestFaultMatrixSSH cuts SSH sessions into a workspace (a real sshd behind an agent, the real
// ssh and scp) at each end: the workspace's sshd serving the session killed -9, the agent
// killed -9, the user's ssh killed -9 mid-session and mid-scp, and raw TCP clients that reset or
// half-close in the middle of the version banner, or reset in the key exchange. Each case
// asserts: edge alive, and a fresh ssh login works; the other side's connection closed (the
// user's ssh exits when the workspace's side went; the workspace's sshd has no connection left
// when the user's went); within 2 s, edge_ssh_sessions_open back to its value before and edge
// and the agent back to their goroutines and files; and a line of edge's log naming the end.
//
// A client that stalls in the banner past the handshake and login deadline is not a case: the
// deadline is 30 s and fixed (sshproxy.Server.serveConn), and a test cannot shorten it.
func TestFaultMatrixSSH(t *testing.T) {
	start := time.Now()
	m := newSSHMatrix(t)
	t.Logf("setup: %v", time.Since(start).Round(time.Millisecond))
	cases := []struct {
		name  string
		fault func(t *testing.T) []string // commits the fault; the parts of the line naming the end
	}{
		{"workspace-sshd-killed", m.sshdKilled},
		{"agent-killed", m.agentKilled},
		{"client-killed", m.clientKilled},
		{"client-killed-mid-scp", m.clientKilledMidSCP},
		{"client-reset-mid-banner", func(t *testing.T) []string { return m.raw(t, "reset-banner") }},
		{"client-half-close-mid-banner", func(t *testing.T) []string { return m.raw(t, "half-close-banner") }},
		{"client-reset-mid-key-exchange", func(t *testing.T) []string { return m.raw(t, "reset-kex") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { m.run(t, c.fault) })
	}
	t.Logf("SSH fault matrix: %d cases in %v", len(cases), time.Since(start).Round(time.Millisecond))
}

// sshOpenGauge counts edge's open SSH sessions.
const sshOpenGauge = "edge_ssh_sessions_open"

type sshMatrix struct {
	e      *sshEnv
	agent  *agentProc
	client *sshClient
}

func newSSHMatrix(t *testing.T) *sshMatrix {
	t.Helper()
	e := newSSHEnv(t, 1)
	m := &sshMatrix{e: e, agent: e.c.agents[0], client: newSSHClient(t, e.sshAddr[0], "alice", e.tokens["alice"])}
	m.freshLogin(t)
	return m
}

func (m *sshMatrix) edge() *edgeProc { return m.e.edges[0] }

// run is one case: the fault, then what must hold after it.
func (m *sshMatrix) run(t *testing.T, fault func(t *testing.T) []string) {
	agent := m.agent
	procs := procSet{watchEdge(m.edge()), watchAgent(agent)}
	before := procs.state(t)
	open := edgeGauge(t, m.edge(), sshOpenGauge)
	marks := procs.marks()
	want := fault(t)
	procs[:1].alive(t)
	if m.agent != agent { // the case started another: only edge's use compares
		procs, before = procs[:1], before[:1]
	}
	m.freshLogin(t)
	gaugeBack(t, m.edge(), sshOpenGauge, open)
	poll.UntilState(t, 2*time.Second, "the workspace's sshd to serve no connection", func() (bool, string) {
		kids := childPIDs(t, m.e.ws.Proc.cmd.Process.Pid)
		return len(kids) == 0, fmt.Sprintf("connection processes %v", kids)
	})
	procs.settled(t, before)
	t.Logf("the end in edge's log: %s", logHas(t, m.edge().process, marks[0], want...))
}

// sshdKilled: the sshd processes serving the session (the connection's process and all it
// started) are killed -9, as when the workspace's container dies; the user's ssh must end.
func (m *sshMatrix) sshdKilled(t *testing.T) []string {
	p := m.session(t)
	kids := childPIDs(t, m.e.ws.Proc.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("sshd serves connections %v, want the session's alone", kids)
	}
	killTree(t, kids[0])
	m.wantClientEnded(t, p)
	return []string{`msg="ssh session ended"`, "ended_by=workspace"}
}

// agentKilled: the agent dies with the session's stream in its tunnel; the user's ssh must end,
// and a new agent serves the fresh login.
func (m *sshMatrix) agentKilled(t *testing.T) []string {
	p := m.session(t)
	m.agent.kill()
	m.wantClientEnded(t, p)
	m.agent = m.e.c.startAgent("a1", m.edge().PublicURL, &upstream{agent: "a1", Port: m.e.ws.Port})
	poll.Until(t, 15*time.Second, "the new agent to connect", m.agent.connected)
	return []string{`msg="ssh session ended"`, "ended_by=workspace"}
}

// clientKilled: the user's ssh is killed -9 in an open session.
func (m *sshMatrix) clientKilled(t *testing.T) []string {
	p := m.session(t)
	p.kill()
	return []string{`msg="ssh session ended"`, "ended_by=user"}
}

// clientKilledMidSCP: the ssh under an scp upload is killed -9 while the file's bytes flow.
func (m *sshMatrix) clientKilledMidSCP(t *testing.T) []string {
	src := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30) // sparse: read as zeros at once
	f.Close()
	remote := filepath.Join(t.TempDir(), "big")
	c := m.client
	args := append([]string{"-P", c.port}, c.options()...)
	cmd := exec.Command("scp", append(args, src, c.destination()+":"+remote)...)
	cmd.Env = c.env()
	p := startProcess(t, "scp", cmd)
	poll.UntilState(t, 15*time.Second, "scp to have written 8 MiB into the workspace", func() (bool, string) {
		select {
		case <-p.exited:
			t.Fatalf("scp exited: %v\n%s", p.waitErr, p.out.String())
		default:
		}
		st, err := os.Stat(remote)
		return err == nil && st.Size() >= 8<<20, fmt.Sprintf("%v", err)
	})
	var ssh []int
	for _, pid := range childPIDs(t, p.cmd.Process.Pid) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "ssh" {
			ssh = append(ssh, pid)
		}
	}
	if len(ssh) != 1 {
		t.Fatalf("scp's ssh processes: %v, want one", ssh)
	}
	syscall.Kill(ssh[0], syscall.SIGKILL)
	if code, err := p.wait(5 * time.Second); err != nil || code == 0 {
		t.Errorf("scp after its ssh was killed: exit %d %v, want a failure\n%s", code, err, p.out.String())
	}
	if st, err := os.Stat(remote); err == nil && st.Size() == 1<<30 {
		t.Errorf("the whole file arrived: the ssh was killed too late to cut the copy")
	}
	return []string{`msg="ssh session ended"`, "ended_by=user"}
}

// raw is a TCP client that ends in the middle of the handshake: how is "reset-banner" (part of
// its version line, then RST), "half-close-banner" (the same, then FIN: edge must close) or
// "reset-kex" (its version line and part of its first packet, after edge's key exchange began,
// then RST).
func (m *sshMatrix) raw(t *testing.T, how string) []string {
	conn, err := net.Dial("tcp", m.e.sshAddr[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if banner, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(banner, "SSH-2.0-") {
		t.Fatalf("edge's version line: %q %v", banner, err)
	}
	switch how {
	case "reset-banner":
		io.WriteString(conn, "SSH-2.0-Open")
		time.Sleep(100 * time.Millisecond)
		reset(conn)
	case "half-close-banner":
		io.WriteString(conn, "SSH-2.0-Open")
		conn.(*net.TCPConn).CloseWrite()
		if got, ended := readToEnd(conn, br, 2*time.Second); !ended || len(got) > 0 {
			t.Errorf("after a half-close in the banner: %q, ended %v; want edge to close with nothing more", got, ended)
		}
	case "reset-kex":
		io.WriteString(conn, "SSH-2.0-faults\r\n\x00\x00\x01\x00\x0a\x14")
		if _, err := br.Peek(6); err != nil { // edge's first packet: its key exchange began
			t.Fatalf("edge's key exchange: %v", err)
		}
		reset(conn)
	}
	return []string{`msg="ssh connection ended before login"`}
}

// session starts ssh with a command that prints a mark and stays, and returns once the mark is
// out: the session is open through edge.
func (m *sshMatrix) session(t *testing.T) *process {
	t.Helper()
	p := m.client.start(t, nil, "echo ready=$((6*7)); exec sleep 600")
	poll.UntilState(t, 15*time.Second, "the session to open", func() (bool, string) {
		out := p.out.String()
		select {
		case <-p.exited:
			t.Fatalf("ssh exited: %v\n%s", p.waitErr, out)
		default:
		}
		return strings.Contains(out, "ready=42"), "output: " + out
	})
	return p
}

// wantClientEnded: the user's ssh ends within 2 s, as a lost connection (255).
func (m *sshMatrix) wantClientEnded(t *testing.T, p *process) {
	t.Helper()
	if code, err := p.wait(2 * time.Second); err != nil || code != 255 {
		t.Errorf("the user's ssh: exit %d %v, want 255 within 2 s (the connection closed)\n%s", code, err, p.out.String())
	}
}

// freshLogin: a new ssh logs in and runs a command.
func (m *sshMatrix) freshLogin(t *testing.T) {
	t.Helper()
	if out, errOut, code := m.client.run(t, "echo fresh=$((6*7))"); out != "fresh=42\n" || code != 0 {
		t.Fatalf("a fresh login: %q exit %d %q, want fresh=42", out, code, errOut)
	}
}

// childPIDs are the processes whose parent is pid.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// killTree kills pid and every process under it with SIGKILL.
func killTree(t *testing.T, pid int) {
	t.Helper()
	all := []int{pid}
	for i := 0; i < len(all); i++ {
		all = append(all, childPIDs(t, all[i])...)
	}
	for _, p := range all {
		syscall.Kill(p, syscall.SIGKILL)
	}
}
