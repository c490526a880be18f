package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// redisServer is a real redis-server on loopback, without persistence, that a test can stop and
// start again on the same port.
type redisServer struct {
	t    *testing.T
	bin  string
	Addr string
	proc *process
}

// startRedis runs redis-server on a free port until the test ends. A missing redis-server fails
// the test: the tunnel tests are about the real thing (`make test` installs it).
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		bin, err = exec.LookPath("/usr/bin/redis-server")
	}
	if err != nil {
		t.Fatalf("redis-server not found (PATH or /usr/bin/redis-server): install the Debian package redis-server (`make test` does): %v", err)
	}
	r := &redisServer{t: t, bin: bin, Addr: freeAddr(t)}
	r.start()
	return r
}

// start runs redis-server on r.Addr and waits for it to answer PING.
func (r *redisServer) start() {
	r.t.Helper()
	host, port, _ := net.SplitHostPort(r.Addr)
	cmd := exec.Command(r.bin, "--bind", host, "--port", port, "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--loglevel", "warning")
	r.proc = startProcess(r.t, "redis-server "+r.Addr, cmd)
	poll.UntilState(r.t, 10*time.Second, "redis-server on "+r.Addr+" to answer PING", func() (bool, string) {
		reply, err := r.do("PING")
		if err == nil && reply == "+PONG" {
			return true, ""
		}
		select {
		case <-r.proc.exited:
			r.t.Fatalf("redis-server on %s exited: %v", r.Addr, r.proc.waitErr)
		default:
		}
		return false, fmt.Sprintf("%q, %v", reply, err)
	})
}

// stop shuts redis-server down and waits until it has exited.
func (r *redisServer) stop() { r.proc.stop(10 * time.Second) }

// do sends one command and returns the first line of the reply ("+OK", ":3", "-ERR ...").
func (r *redisServer) do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// agentProc is a running `edge agent`.
type agentProc struct {
	*process
	ID     string
	OpsURL string
	client *http.Client
}

// startAgentProc runs `edge agent` against edgeURL with the token in tokenFile, serving the
// given upstream ports, until the test ends.
func startAgentProc(t *testing.T, id, edgeURL, tokenFile string, ports ...int) *agentProc {
	t.Helper()
	return startAgentWithConfig(t, id, edgeURL, tokenFile, "", ports...)
}

// startAgentWithConfig is startAgentProc with a config file too (empty: none), for what only a
// file sets (a tracing block); the flags override the rest.
func startAgentWithConfig(t *testing.T, id, edgeURL, tokenFile, config string, ports ...int) *agentProc {
	t.Helper()
	ops := freeAddr(t)
	args := []string{"agent", "--edge", edgeURL, "--token-file", tokenFile, "--ops", ops, "--log-level", "debug"}
	if config != "" {
		args = append(args, "--config", config)
	}
	for _, p := range ports {
		args = append(args, "--allow-port", strconv.Itoa(p))
	}
	a := &agentProc{ID: id, OpsURL: "http://" + ops, client: &http.Client{Timeout: time.Second}}
	a.process = startProcess(t, "agent "+id, exec.Command(edgeBinaryPath(), args...))
	return a
}

// connected tells whether the agent's /healthz says it holds a connection to an edge.
func (a *agentProc) connected() bool {
	res, err := a.client.Get(a.OpsURL + "/healthz")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// tcpBalancer is a minimal L4 load balancer: each connection goes to the first backend that
// accepts a TCP connection, so an agent behind it reconnects to another edge when one dies.
type tcpBalancer struct {
	ln       net.Listener
	backends []string

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func startBalancer(t *testing.T, backends ...string) *tcpBalancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("balancer: %v", err)
	}
	b := &tcpBalancer{ln: ln, backends: backends, conns: map[net.Conn]bool{}}
	b.wg.Go(b.accept)
	t.Cleanup(b.close)
	return b
}

func (b *tcpBalancer) URL() string { return "http://" + b.ln.Addr().String() }

func (b *tcpBalancer) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.wg.Go(func() { b.relay(c) })
	}
}

func (b *tcpBalancer) relay(front net.Conn) {
	var back net.Conn
	for _, addr := range b.backends {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			back = c
			break
		}
	}
	if back == nil || !b.track(front, back) {
		front.Close()
		if back != nil {
			back.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(back, front)
	go pipe(front, back)
	<-done // one side ended: end both, as a load balancer resets the other side
	front.Close()
	back.Close()
	<-done
	b.mu.Lock()
	delete(b.conns, front)
	delete(b.conns, back)
	b.mu.Unlock()
}

// track remembers a relayed pair for close; false once the balancer is closed.
func (b *tcpBalancer) track(cs ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns == nil {
		return false
	}
	for _, c := range cs {
		b.conns[c] = true
	}
	return true
}

func (b *tcpBalancer) close() {
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.conns = nil
	b.mu.Unlock()
	b.wg.Wait()
}

// metricSum fetches a Prometheus text endpoint and sums every series of the named metric whose
// labels contain match (empty: all).
func metricSum(url, name, match string) (float64, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	res, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var sum float64
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') || !strings.Contains(rest, match) {
			continue
		}
		v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", url, line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}
