package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"gitlab.com/edge/edge/bench"
)

// startHAProxy starts HAProxy in the foreground (-db: no daemon, no master process), so the
// supervisor stops it like nginx; its config lives in a directory of its own.
func (h *harness) startHAProxy(ctx context.Context) error {
	dir := filepath.Join(h.dir, "haproxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("haproxy dir: %w", err)
	}
	port, err := bench.FreePort()
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(conf, []byte(bench.HAProxyConfig(port, h.upstreamPorts[0])), 0o644); err != nil {
		return fmt.Errorf("write haproxy config: %w", err)
	}
	p, err := h.sup.Start("haproxy", h.pinned(h.opts.serverCPU, h.tools.haproxy, "-db", "-f", conf), bench.StartOptions{})
	if err != nil {
		return err
	}
	h.haproxy, h.haproxyPort = p, port
	if err := p.WaitHTTP(ctx, startTimeout, fmt.Sprintf("http://127.0.0.1:%d/", port)); err != nil {
		return fmt.Errorf("haproxy: %w", err)
	}
	return nil
}

// startCaddy starts Caddy with one P, as edge has once pinned to one CPU and as nginx and HAProxy
// have one worker; Caddy's data and config directories are kept in its own directory rather
// than under $HOME.
func (h *harness) startCaddy(ctx context.Context) error {
	dir := filepath.Join(h.dir, "caddy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("caddy dir: %w", err)
	}
	port, err := bench.FreePort()
	if err != nil {
		return err
	}
	cfg, err := bench.CaddyConfig(port, h.upstreamPorts[0])
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "caddy.json")
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("write caddy config: %w", err)
	}
	env := []string{"GOMAXPROCS=1", "XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
	p, err := h.sup.Start("caddy", h.pinned(h.opts.serverCPU, h.tools.caddy, "run", "--config", conf), bench.StartOptions{Env: env})
	if err != nil {
		return err
	}
	h.caddy, h.caddyPort = p, port
	if err := p.WaitHTTP(ctx, startTimeout, fmt.Sprintf("http://127.0.0.1:%d/", port)); err != nil {
		return fmt.Errorf("caddy: %w", err)
	}
	return nil
}

// startPlain builds and starts the plain httputil proxy (bench/cmd/plainproxy) to the first
// upstream listener, pinned with the servers; its GOMAXPROCS is Go's default, which follows the
// pinning (1), as edge's does.
func (h *harness) startPlain(ctx context.Context) error {
	p, port, err := h.startGoPeer(ctx, "plainproxy", "plain", fmt.Sprintf("http://127.0.0.1:%d", h.upstreamPorts[0]))
	if err != nil {
		return fmt.Errorf("plain httputil proxy: %w", err)
	}
	h.plain, h.plainPort, h.plainInfo = p, port, plainInfo(p.Log)
	return nil
}

// startFloor builds and starts the Go floor (bench/cmd/floorproxy) to the first upstream
// listener, pinned with the servers as the plain proxy is.
func (h *harness) startFloor(ctx context.Context) error {
	p, port, err := h.startGoPeer(ctx, "floorproxy", "floor", fmt.Sprintf("127.0.0.1:%d", h.upstreamPorts[0]))
	if err != nil {
		return fmt.Errorf("Go floor proxy: %w", err)
	}
	h.floor, h.floorPort = p, port
	return nil
}

// startGoPeer builds ./bench/cmd/<cmd> and runs it pinned with the servers, listening on a free
// port with --upstream upstream, until it answers a GET.
func (h *harness) startGoPeer(ctx context.Context, cmd, name, upstream string) (*bench.Proc, int, error) {
	bin, err := h.goBuild(ctx, "./bench/cmd/"+cmd, cmd)
	if err != nil {
		return nil, 0, err
	}
	port, err := bench.FreePort()
	if err != nil {
		return nil, 0, err
	}
	p, err := h.sup.Start(name, h.pinned(h.opts.serverCPU, bin,
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--upstream", upstream), bench.StartOptions{})
	if err != nil {
		return nil, 0, err
	}
	return p, port, p.WaitHTTP(ctx, startTimeout, fmt.Sprintf("http://127.0.0.1:%d/", port))
}

// plainInfo is what the plain proxy said when it started ("listening ..., GOMAXPROCS 1,
// go1.x"), for the header.
func plainInfo(log string) string {
	b, err := os.ReadFile(log)
	if err != nil {
		return "log unreadable"
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if _, after, ok := strings.Cut(line, "upstream "); ok {
		if _, rest, ok := strings.Cut(after, ", "); ok {
			return rest
		}
	}
	return strings.TrimSpace(line)
}

// findCaddy is --caddy-bin, or the Caddy scripts/caddy.sh builds from the Go module proxy once
// (minutes) and caches; its progress goes to the harness's stderr.
func (h *harness) findCaddy(ctx context.Context) error {
	if !slices.Contains(h.opts.cases, caseCaddy) {
		return nil
	}
	if h.opts.caddyBin != "" {
		h.tools.caddy = h.opts.caddyBin
		return nil
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(h.repo, "scripts", "caddy.sh"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = h.repo, &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("scripts/caddy.sh (or give --caddy-bin): %w", err)
	}
	h.tools.caddy = strings.TrimSpace(out.String())
	if !fileExists(h.tools.caddy) {
		return fmt.Errorf("scripts/caddy.sh printed %q, which is not a file", h.tools.caddy)
	}
	return nil
}
