package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// edgeConfig is the part of edge's YAML config the tests write.
type edgeConfig struct {
	Listen      listenConfig       `yaml:"listen"`
	Cells       []cellConfig       `yaml:"cells"`
	Routing     routingConfig      `yaml:"routing,omitempty"`
	Tokens      tokensConfig       `yaml:"tokens"`
	Registry    *registryConfig    `yaml:"registry,omitempty"`
	Internal    *secretConfig      `yaml:"internal,omitempty"`
	Agents      *agentsConfig      `yaml:"agents,omitempty"`
	GitLabAPI   *secretConfig      `yaml:"gitlab_api,omitempty"`
	Shutdown    shutdownConfig     `yaml:"shutdown,omitempty"`
	Workspaces  *workspacesConfig  `yaml:"workspaces,omitempty"`
	TLS         *tlsConfig         `yaml:"tls,omitempty"`
	Aggregation *aggregationConfig `yaml:"aggregation,omitempty"`
	Log         logConfig          `yaml:"log,omitempty"`
	Tracing     *tracingConfig     `yaml:"tracing,omitempty"`
	Runners     *runnersConfig     `yaml:"runners,omitempty"`
}

type tracingConfig struct {
	Endpoint    string  `yaml:"otlp_endpoint"`
	Protocol    string  `yaml:"protocol,omitempty"`
	SampleRatio float64 `yaml:"sample_ratio"`
}

type listenConfig struct {
	Public            string `yaml:"public"`
	Ops               string `yaml:"ops"`
	Internal          string `yaml:"internal,omitempty"`
	AdvertiseInternal string `yaml:"advertise_internal,omitempty"`
	SSH               string `yaml:"ssh,omitempty"`
}

type registryConfig struct {
	Redis   redisConfig `yaml:"redis"`
	TTL     string      `yaml:"ttl,omitempty"`
	Refresh string      `yaml:"refresh,omitempty"`
}

type redisConfig struct {
	Addr      string `yaml:"addr"`
	KeyPrefix string `yaml:"key_prefix,omitempty"`
}

// secretConfig is the internal and gitlab_api sections: a file holding a shared secret.
type secretConfig struct {
	SecretFile string `yaml:"secret_file"`
	// The internal section's TLS: its listener's certificate, and the CA that verifies others'.
	TLS    *staticTLSConfig `yaml:"tls,omitempty"`
	CAFile string           `yaml:"ca_file,omitempty"`
}

type agentsConfig struct {
	Keys           []keyConfig `yaml:"keys"`
	Wait           string      `yaml:"wait,omitempty"`
	MaxConnections int         `yaml:"max_connections,omitempty"`
}

type cellConfig struct {
	ID       uint64        `yaml:"id"`
	URL      string        `yaml:"url,omitempty"`
	URLs     []string      `yaml:"urls,omitempty"`
	Health   *healthConfig `yaml:"health,omitempty"`
	Legacy   bool          `yaml:"legacy,omitempty"`
	IDRanges []string      `yaml:"id_ranges,omitempty"`
}

type healthConfig struct {
	Path           string `yaml:"path,omitempty"`
	Interval       string `yaml:"interval,omitempty"`
	Timeout        string `yaml:"timeout,omitempty"`
	HealthyAfter   int    `yaml:"healthy_after,omitempty"`
	UnhealthyAfter int    `yaml:"unhealthy_after,omitempty"`
}

type routingConfig struct {
	ClassifyURL     string   `yaml:"classify_url,omitempty"`
	BodyTokenLimit  string   `yaml:"body_token_limit,omitempty"`
	LongPollTimeout string   `yaml:"long_poll_timeout,omitempty"`
	UpstreamTimeout string   `yaml:"upstream_timeout,omitempty"`
	TrustedProxies  []string `yaml:"trusted_proxies,omitempty"`
}

type tokensConfig struct {
	JobJWT jobJWTConfig `yaml:"job_jwt"`
}

type jobJWTConfig struct {
	Verify    bool        `yaml:"verify"`
	OnInvalid string      `yaml:"on_invalid,omitempty"`
	Keys      []keyConfig `yaml:"keys,omitempty"`
	Issuer    string      `yaml:"issuer,omitempty"`
	Audience  string      `yaml:"audience,omitempty"`
}

type keyConfig struct {
	KID  string `yaml:"kid,omitempty"`
	Alg  string `yaml:"alg"`
	File string `yaml:"file"`
}

type shutdownConfig struct {
	Grace string `yaml:"grace,omitempty"`
}

type logConfig struct {
	Level  string `yaml:"level,omitempty"`
	Format string `yaml:"format,omitempty"`
	Access *bool  `yaml:"access,omitempty"`
}

// process is a child process (edge serve, edge agent, redis-server) whose output is kept and
// printed if the test fails.
type process struct {
	name    string
	cmd     *exec.Cmd
	out     *cappedBuffer
	exited  chan struct{}
	waitErr error
}

// startProcess starts cmd and stops it (SIGTERM, then SIGKILL) when the test ends.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, out: &cappedBuffer{max: 4 << 20}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop(10 * time.Second)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.out.String())
		}
	})
	return p
}

// edgeProc is a running `edge serve`.
type edgeProc struct {
	*process
	PublicURL   string
	OpsURL      string
	InternalURL string // empty without listen.internal
	ConfigPath  string
}

// startEdge writes cfg (empty public and ops addresses are filled in; advertise_internal
// defaults to listen.internal) and runs `edge serve` until the test ends; it returns once
// /readyz answers 200. The process's output is printed if the test fails.
func startEdge(t *testing.T, cfg edgeConfig) *edgeProc {
	t.Helper()
	if cfg.Listen.Public == "" {
		cfg.Listen.Public = freeAddr(t)
	}
	if cfg.Listen.Ops == "" {
		cfg.Listen.Ops = freeAddr(t)
	}
	if cfg.Listen.Internal != "" && cfg.Listen.AdvertiseInternal == "" {
		cfg.Listen.AdvertiseInternal = "http://" + cfg.Listen.Internal
	}
	if cfg.Shutdown.Grace == "" {
		cfg.Shutdown.Grace = "5s"
	}
	if cfg.Log.Format == "" {
		cfg.Log = logConfig{Level: "info", Format: "text"}
	}
	path := writeConfig(t, cfg)
	e := &edgeProc{
		PublicURL:   "http://" + cfg.Listen.Public,
		OpsURL:      "http://" + cfg.Listen.Ops,
		InternalURL: cfg.Listen.AdvertiseInternal,
		ConfigPath:  path,
	}
	e.process = startProcess(t, "edge ("+path+")", exec.Command(edgeBinaryPath(), "serve", "--config", path))
	if err := e.waitReady(20 * time.Second); err != nil {
		t.Fatalf("edge not ready: %v", err)
	}
	return e
}

func writeConfig(t *testing.T, cfg edgeConfig) string {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("marshal config: %v", err)
	}
	path := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("write config: %v", err)
	}
	return path
}

// waitReady polls /readyz until it answers 200, the process exits or the deadline passes.
func (e *edgeProc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-e.exited:
			return fmt.Errorf("edge exited: %v", e.waitErr)
		default:
		}
		res, err := client.Get(e.OpsURL + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no 200 from %s/readyz in %v (last: %v)", e.OpsURL, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and kills the process if it has not exited after timeout.
func (p *process) stop(timeout time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill sends SIGKILL (nothing is cleaned up, as when a machine dies) and waits for the exit.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(timeout time.Duration) (int, error) {
	select {
	case <-p.exited:
	case <-time.After(timeout):
		return -1, fmt.Errorf("%s still running after %v", p.name, timeout)
	}
	var exit *exec.ExitError
	if errors.As(p.waitErr, &exit) {
		return exit.ExitCode(), nil
	}
	if p.waitErr != nil {
		return -1, p.waitErr
	}
	return 0, nil
}

// memKB reads a field such as VmRSS or VmHWM (in kB) from /proc/<pid>/status.
func (p *process) memKB(field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("proc status: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, p.cmd.Process.Pid)
}

// freeAddr picks a free loopback port by listening on port 0 and closing. The kernel may hand
// a port just closed out again, so a port is never given twice in one test run: two calls for
// one edge's listeners once returned the same one.
func freeAddr(t *testing.T) string {
	t.Helper()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatalf("free port: the kernel keeps handing out ports already given")
	return ""
}

var handedOut = struct {
	mu    sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// cappedBuffer keeps the first max bytes of a process's output.
type cappedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - b.buf.Len()
	switch {
	case room <= 0:
		b.dropped += len(p)
	case len(p) > room:
		b.buf.Write(p[:room])
		b.dropped += len(p) - room
	default:
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("%s\n[... %d more bytes not kept]", b.buf.String(), b.dropped)
	}
	return b.buf.String()
}
