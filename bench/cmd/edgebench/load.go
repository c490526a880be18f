package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// url is where a case sends its requests.
func (h *harness) url(c benchCase) string {
	port := h.upstreamPorts[0]
	switch c.target {
	case targetNginx:
		port = h.nginxPort
	case targetHAProxy:
		port = h.haproxyPort
	case targetCaddy:
		port = h.caddyPort
	case targetPlain:
		port = h.plainPort
	case targetFloor:
		port = h.floorPort
	case targetEdge:
		port = h.edgePort
	case targetEdge2:
		port = h.edge2Port
	case targetEdgeNetHTTP:
		port = h.edgeNetHTTPPort
	}
	path := c.path
	if c.viaAgent {
		path = fmt.Sprintf("/-/api/v1/agents/%s/proxy/%d%s", agentID, h.upstreamPorts[0], c.path)
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", port, path)
}

// part is one process on a case's path, named as in the table's CPU split.
type part struct {
	name string
	p    *bench.Proc
}

// pathProcs are the processes between the client and the upstream, the one the client talks to
// first: none for direct; the proxy (a peer, the plain httputil proxy, edge or the edge on
// net/http's server); for a tunnel the edge and the agent, and for the hop also the entry edge
// and the Redis it asks where the agent is.
func (h *harness) pathProcs(c benchCase) []part {
	switch {
	case c.target == targetNginx:
		return []part{{"nginx", h.nginx}}
	case c.target == targetHAProxy:
		return []part{{"haproxy", h.haproxy}}
	case c.target == targetCaddy:
		return []part{{"caddy", h.caddy}}
	case c.target == targetPlain:
		return []part{{"plain", h.plain}}
	case c.target == targetFloor:
		return []part{{"floor", h.floor}}
	case c.target == targetEdgeNetHTTP:
		return []part{{targetEdgeNetHTTP, h.edgeNetHTTP}}
	case c.target == targetEdge2:
		return []part{{bench.PartEdge2, h.edge2}, {bench.PartEdge, h.edge}, {bench.PartAgent, h.agent}, {bench.PartRedis, h.redis}}
	case c.target == targetEdge && c.viaAgent:
		return []part{{bench.PartEdge, h.edge}, {bench.PartAgent, h.agent}}
	case c.target == targetEdge:
		return []part{{bench.PartEdge, h.edge}}
	}
	return nil
}

// proxy is the process a case's client talks to (what --profile samples); nil for direct.
func (h *harness) proxy(c benchCase) *bench.Proc {
	if ps := h.pathProcs(c); len(ps) > 0 {
		return ps[0].p
	}
	return nil
}

// cpuOf reads the CPU each process (with its children) has used so far.
func cpuOf(ps []part) ([]time.Duration, error) {
	out := make([]time.Duration, len(ps))
	for i, x := range ps {
		var err error
		if out[i], err = bench.TreeCPU("/proc", x.p.PID()); err != nil {
			return nil, fmt.Errorf("cpu of %s: %w", x.name, err)
		}
	}
	return out, nil
}

// spent fills a run's CPU from snapshots before and after: the path's total, split by process
// when there are several, and the upstream's (the last entry of ps).
func spent(ps []part, before, after []time.Duration) (total, upstream time.Duration, parts map[string]time.Duration) {
	n := len(ps) - 1
	upstream = after[n] - before[n]
	for i := range n {
		d := after[i] - before[i]
		total += d
		if n > 1 {
			if parts == nil {
				parts = map[string]time.Duration{}
			}
			parts[ps[i].name] = d
		}
	}
	return total, upstream, parts
}

// failed is the first of ps that has exited.
func failed(ps []part) error {
	for _, x := range ps {
		if x.p.Exited() {
			return x.p.Failure()
		}
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

// wrk runs one load of d at the configured connections against a case and parses its output.
func (h *harness) wrk(ctx context.Context, c benchCase, script string, d time.Duration) (bench.WrkResult, error) {
	return h.wrkLoad(ctx, c, script, d, h.opts.connections)
}

// wrkLoad runs wrk with conns connections (and no more threads than connections).
func (h *harness) wrkLoad(ctx context.Context, c benchCase, script string, d time.Duration, conns int) (bench.WrkResult, error) {
	secs := max(1, int((d+time.Second/2)/time.Second))
	argv := h.pinned(h.opts.clientCPU, h.tools.wrk,
		"-t"+strconv.Itoa(min(h.opts.threads, conns)), "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(secs)+"s",
		"--timeout", "10s", "--latency", "-s", script, h.url(c))
	res, err := bench.RunWrk(ctx, argv)
	if err != nil && ctx.Err() == nil {
		return res, fmt.Errorf("%s: %w", c.id, err)
	}
	return res, err
}

// measure runs one load of d with conns connections and the CPU the processes on the path and
// the upstream spent during it.
func (h *harness) measure(ctx context.Context, c benchCase, script string, round int, d time.Duration, conns int) (bench.Run, error) {
	run := bench.Run{Case: c.id, Round: round}
	path := h.pathProcs(c)
	ps := append(path, part{"upstream", h.upstream})
	before, err := cpuOf(ps)
	if err != nil {
		return run, err
	}
	if run.Wrk, err = h.wrkLoad(ctx, c, script, d, conns); err != nil {
		return run, err
	}
	after, err := cpuOf(ps)
	if err != nil {
		return run, err
	}
	run.HasProxy = len(path) > 0
	run.ProxyCPU, run.UpstreamCPU, run.Parts = spent(ps, before, after)
	return run, failed(ps)
}
