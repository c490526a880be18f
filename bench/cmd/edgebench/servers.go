package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// The job JWT's verification settings, shared by the token the harness mints and edge's config.
const (
	jwtIssuer   = "https://gitlab.example.com"
	jwtAudience = "gitlab-authz-token"
	jwtKid      = "k1"
)

const startTimeout = 20 * time.Second

// harness is one benchmark's environment: tools, directory, and the servers it started.
type harness struct {
	opts  options
	tools tools
	pin   bool
	dir   string
	repo  string
	sup   *bench.Supervisor
	// out is standard output and printed, which keeps it for the results directory.
	out     io.Writer
	printed *bytes.Buffer

	upstream      *bench.Proc
	upstreamPorts [3]int
	nginx         *bench.Proc
	nginxPort     int
	haproxy       *bench.Proc
	haproxyPort   int
	caddy         *bench.Proc
	caddyPort     int
	plain         *bench.Proc // the plain httputil proxy (bench/cmd/plainproxy)
	plainPort     int
	floor         *bench.Proc // the Go floor (bench/cmd/floorproxy)
	floorPort     int
	plainInfo     string // its line on starting: listener, GOMAXPROCS, Go version
	edge          *bench.Proc
	edgeBin       string
	edgePort      int
	edgeOpsPort   int
	// edgeNetHTTP is an edge like edge, serving its public listener with net/http's server
	// (edge-nethttp).
	edgeNetHTTP     *bench.Proc
	edgeNetHTTPPort int

	// The tunnel cases: the agent (connected to edge), the second edge of the hop and the
	// registry (Redis) the two edges share.
	agent     *bench.Proc
	edge2     *bench.Proc
	edge2Port int
	redis     *bench.Proc
	redisAddr string
	tokens    caseTokens
}

// pinned prefixes argv with taskset when pinning is on.
func (h *harness) pinned(cpu int, argv ...string) []string {
	return bench.Pinner{Taskset: h.tools.taskset, On: h.pin}.Pin(cpu, argv...)
}

// goBuild builds a package of the repository into the harness's directory.
func (h *harness) goBuild(ctx context.Context, pkg, name string) (string, error) {
	return bench.GoBuildIn(ctx, h.repo, h.dir, pkg, name)
}

// startUpstream starts the one upstream process with three listeners on ports it picks, and
// learns them from its "listening" lines.
func (h *harness) startUpstream(ctx context.Context) error {
	bin, err := h.goBuild(ctx, "./bench/cmd/upstream", "upstream")
	if err != nil {
		return err
	}
	p, err := h.sup.Start("upstream", h.pinned(h.opts.serverCPU, bin, "--listen", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0"), bench.StartOptions{})
	if err != nil {
		return err
	}
	h.upstream = p
	var ports []int
	err = p.WaitReady(ctx, startTimeout, func() (bool, error) {
		ports = ports[:0]
		f, err := os.Open(p.Log)
		if err != nil {
			return false, nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				_, port, err := net.SplitHostPort(addr)
				if err != nil {
					return false, fmt.Errorf("upstream printed %q: %w", sc.Text(), err)
				}
				n, _ := strconv.Atoi(port)
				ports = append(ports, n)
			}
			if sc.Text() == "ready" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	if len(ports) != 3 {
		return fmt.Errorf("upstream: got %d listeners, want 3", len(ports))
	}
	copy(h.upstreamPorts[:], ports)
	return nil
}

// startNginx starts nginx with a config of its own in a directory of its own.
func (h *harness) startNginx(ctx context.Context) error {
	prefix := filepath.Join(h.dir, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return fmt.Errorf("nginx dir: %w", err)
	}
	port, err := bench.FreePort()
	if err != nil {
		return err
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, []byte(bench.NginxConfig(prefix, port, h.upstreamPorts[0])), 0o644); err != nil {
		return fmt.Errorf("write nginx config: %w", err)
	}
	p, err := h.sup.Start("nginx", h.pinned(h.opts.serverCPU, h.tools.nginx,
		"-p", prefix, "-e", filepath.Join(prefix, "error.log"), "-c", conf, "-g", "daemon off;"), bench.StartOptions{})
	if err != nil {
		return err
	}
	h.nginx, h.nginxPort = p, port
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if err := p.WaitHTTP(ctx, startTimeout, url); err != nil {
		return fmt.Errorf("nginx: %w (its error log: %s)", err, filepath.Join(prefix, "error.log"))
	}
	return nil
}

// buildEdge builds edge (unless given), which the harness also runs to mint the tunnel cases'
// tokens.
func (h *harness) buildEdge(ctx context.Context) error {
	h.edgeBin = h.opts.edgeBin
	if h.edgeBin != "" {
		return nil
	}
	var err error
	h.edgeBin, err = h.goBuild(ctx, "./cmd/edge", "edge")
	return err
}

// startEdge starts edge with three cells on the upstream's listeners, and the agent sections the
// selected tunnel cases need (none for the other cases).
func (h *harness) startEdge(ctx context.Context, jwtPub string) error {
	var o bench.EdgeOptions
	if needsAgent(h.opts.cases) {
		var err error
		if o.Agents, err = h.edgeAgents(true); err != nil {
			return err
		}
	}
	p, pub, ops, err := h.startEdgeProc(ctx, "edge", jwtPub, o)
	if err != nil {
		return err
	}
	h.edge, h.edgePort, h.edgeOpsPort = p, pub, ops
	return nil
}

// startEdgeNetHTTP starts the edge of edge-nethttp: edge's config, binary and pinning, no agent
// sections, and listen.http1 set to net/http, so that beside edge-a it shows what edge's own
// engine changes and nothing else.
func (h *harness) startEdgeNetHTTP(ctx context.Context, jwtPub string) error {
	p, pub, _, err := h.startEdgeProc(ctx, targetEdgeNetHTTP, jwtPub, bench.EdgeOptions{HTTP1: bench.HTTP1NetHTTP})
	if err != nil {
		return err
	}
	h.edgeNetHTTP, h.edgeNetHTTPPort = p, pub
	return nil
}

// startEdgeProc writes name.yaml and starts an edge with it, ready when its /readyz is 200.
func (h *harness) startEdgeProc(ctx context.Context, name, jwtPub string, o bench.EdgeOptions) (*bench.Proc, int, int, error) {
	pub, err := bench.FreePort()
	if err != nil {
		return nil, 0, 0, err
	}
	ops, err := bench.FreePort()
	if err != nil {
		return nil, 0, 0, err
	}
	conf := filepath.Join(h.dir, name+".yaml")
	cfg := bench.EdgeConfig(pub, ops, h.upstreamPorts, jwtPub, jwtIssuer, jwtAudience, jwtKid, o)
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return nil, 0, 0, fmt.Errorf("write %s config: %w", name, err)
	}
	p, err := h.sup.Start(name, h.pinned(h.opts.serverCPU, h.edgeBin, "serve", "--config", conf), bench.StartOptions{})
	if err != nil {
		return nil, 0, 0, err
	}
	if err := p.WaitHTTP(ctx, startTimeout, fmt.Sprintf("http://127.0.0.1:%d/readyz", ops)); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	return p, pub, ops, nil
}
