// Package redistest runs a real redis-server for tests: standalone or a one-node Cluster.
package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a redis-server process on a loopback port, without persistence, that the test
// started and stops at its end.
type Server struct {
	// Addr is host:port; it stays the same across Stop and Start.
	Addr string

	t       testing.TB
	bin     string
	dir     string
	out     lockedBuffer
	cluster bool
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Start starts redis-server on a free loopback port. A missing redis-server fails the test:
// what needs Redis is not checked without it (make test installs it).
func Start(t testing.TB) *Server {
	t.Helper()
	return startRedis(t, false)
}

// StartCluster starts a one-node Redis Cluster that owns every slot: enough to run code
// through redis.ClusterClient, which refuses a transaction across slots.
func StartCluster(t testing.TB) *Server {
	t.Helper()
	return startRedis(t, true)
}

func startRedis(t testing.TB, cluster bool) *Server {
	t.Helper()
	bin, err := redisServerPath()
	if err != nil {
		t.Fatalf("%v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	s := &Server{Addr: addr, t: t, bin: bin, dir: t.TempDir(), cluster: cluster}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("redis-server output:\n%s", s.out.String())
		}
	})
	s.Start()
	return s
}

func redisServerPath() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("redis-server not found in PATH nor /usr/bin: the Redis tests need it; " +
		"install it (make test runs ./scripts/deps.sh redis-server=redis-server, i.e. apt-get install redis-server)")
}

// Start starts the server (again) on Addr and waits until it answers PING.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	args := []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no"}
	if s.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd = cmd
	s.exited = exited
	deadline := time.Now().Add(10 * time.Second)
	for !ping(s.Addr) {
		select {
		case <-exited:
			s.cmd = nil
			s.t.Fatalf("redis-server exited at start:\n%s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer PING within 10s:\n%s", s.Addr, s.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.cluster {
		s.claimAllSlots(deadline)
	}
}

// claimAllSlots gives the node every slot (a restarted node remembers them in nodes.conf) and
// waits for the cluster to be ok.
func (s *Server) claimAllSlots(deadline time.Time) {
	s.t.Helper()
	if info := command(s.Addr, "CLUSTER", "INFO"); !strings.Contains(info, "cluster_slots_assigned:16384") {
		if got := command(s.Addr, "CLUSTER", "ADDSLOTSRANGE", "0", "16383"); got != "+OK" {
			s.t.Fatalf("CLUSTER ADDSLOTSRANGE: %q", got)
		}
	}
	for !strings.Contains(command(s.Addr, "CLUSTER", "INFO"), "cluster_state:ok") {
		if time.Now().After(deadline) {
			s.t.Fatalf("redis cluster on %s not ok within 10s: %s", s.Addr, command(s.Addr, "CLUSTER", "INFO"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server and waits for it to exit; its data is gone.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

func ping(addr string) bool { return command(addr, "PING") == "+PONG" }

// command sends one command and returns its reply: a status line as is ("+OK"), a bulk string's
// content; "" on any failure.
func command(addr string, args ...string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	req := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(req)); err != nil {
		return ""
	}
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return ""
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "$") {
		return line
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return ""
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return ""
	}
	return string(buf[:n])
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
