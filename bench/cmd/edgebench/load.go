package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

// url is where a case sends its requests.
func (h *harness) url(c benchCase) string {
	port := h.upstreamPorts[0]
	switch c.target {
	case targetNginx:
		port = h.nginxPort
	case targetEdge:
		port = h.edgePort
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", port, c.path)
}

// proxy is the process whose CPU a case measures; nil for the direct case.
func (h *harness) proxy(c benchCase) *proc {
	switch c.target {
	case targetNginx:
		return h.nginx
	case targetEdge:
		return h.edge
	}
	return nil
}

// verify sends a case's request once and checks it reached the intended upstream listener with
// its body whole, so the numbers are known to measure the routing they claim to.
func (h *harness) verify(ctx context.Context, c benchCase) error {
	req, err := http.NewRequestWithContext(ctx, c.method, h.url(c), strings.NewReader(c.body))
	if err != nil {
		return err
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", c.id, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	wantPort := strconv.Itoa(h.upstreamPorts[c.wantUpstream])
	gotPort := resp.Header.Get("Bench-Upstream")
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: %s %s answered %s (upstream %q)", c.id, c.method, c.path, resp.Status, gotPort)
	case gotPort != wantPort:
		return fmt.Errorf("%s: reached upstream listener %q (cell %d), want %s (cell %d)",
			c.id, gotPort, h.cellOf(gotPort), wantPort, c.wantUpstream+1)
	case resp.Header.Get("Bench-Body-Bytes") != strconv.Itoa(len(c.body)):
		return fmt.Errorf("%s: upstream got %s body bytes, want %d", c.id, resp.Header.Get("Bench-Body-Bytes"), len(c.body))
	}
	return nil
}

func (h *harness) cellOf(port string) int {
	for i, p := range h.upstreamPorts {
		if strconv.Itoa(p) == port {
			return i + 1
		}
	}
	return 0
}

// writeScripts writes each case's wrk script (0600: edge cases hold tokens).
func (h *harness) writeScripts(cases []benchCase) (map[string]string, error) {
	scripts := map[string]string{}
	for _, c := range cases {
		path := filepath.Join(h.dir, c.id+".lua")
		if err := os.WriteFile(path, []byte(bench.WrkScript(c.method, c.headers, c.body)), 0o600); err != nil {
			return nil, fmt.Errorf("write wrk script: %w", err)
		}
		scripts[c.id] = path
	}
	return scripts, nil
}

// wrk runs one load of d against a case and parses its output.
func (h *harness) wrk(ctx context.Context, c benchCase, script string, d time.Duration) (bench.WrkResult, error) {
	secs := max(1, int((d+time.Second/2)/time.Second))
	argv := h.pinned(h.opts.clientCPU, h.tools.wrk,
		"-t"+strconv.Itoa(h.opts.threads), "-c"+strconv.Itoa(h.opts.connections), "-d"+strconv.Itoa(secs)+"s",
		"--timeout", "10s", "--latency", "-s", script, h.url(c))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return bench.WrkResult{}, ctx.Err()
	}
	if err != nil {
		return bench.WrkResult{}, fmt.Errorf("wrk %s: %w\n%s", c.id, err, out)
	}
	res, err := bench.ParseWrk(string(out))
	if err != nil {
		return res, fmt.Errorf("wrk %s: %w\n%s", c.id, err, out)
	}
	return res, nil
}

// measure runs one load and the CPU the proxy and the upstream spent during it.
func (h *harness) measure(ctx context.Context, c benchCase, script string, round int) (bench.Run, error) {
	run := bench.Run{Case: c.id, Round: round}
	proxy := h.proxy(c)
	var proxyBefore, proxyAfter time.Duration
	upBefore, err := bench.TreeCPU("/proc", h.upstream.pid())
	if err != nil {
		return run, err
	}
	if proxy != nil {
		run.HasProxy = true
		if proxyBefore, err = bench.TreeCPU("/proc", proxy.pid()); err != nil {
			return run, err
		}
	}
	if run.Wrk, err = h.wrk(ctx, c, script, h.opts.duration); err != nil {
		return run, err
	}
	upAfter, err := bench.TreeCPU("/proc", h.upstream.pid())
	if err != nil {
		return run, err
	}
	run.UpstreamCPU = upAfter - upBefore
	if proxy != nil {
		if proxyAfter, err = bench.TreeCPU("/proc", proxy.pid()); err != nil {
			return run, err
		}
		run.ProxyCPU = proxyAfter - proxyBefore
	}
	for _, p := range []*proc{h.upstream, proxy} {
		if p != nil && p.exited() {
			return run, p.failure()
		}
	}
	return run, nil
}
