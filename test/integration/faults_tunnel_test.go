package integration

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// tunnelFaultPath is one way to an agent's upstream port (the fault cell): which agent (it
// splices or serves each request itself), at which edge the client enters, and the holder when
// that is another edge.
type tunnelFaultPath struct {
	name       string
	agent      *agentProc
	perRequest bool // the agent serves each request itself
	entry      *edgeProc
	holder     *edgeProc // nil: the entry holds the agent
}

// TestFaultMatrixTunnel drives the fault matrix through agents: the per-request tunnel (an agent
// with a tracing block parses and proxies each request), splice streams (edge writes the request
// on a stream the agent relays to its upstream), and the edge-to-edge hop to the edge that holds
// the agent (a GET spliced through the holder, a POST with a body sent to the holder as a
// request; to the per-request agent, both as requests). The fault cell is the agents' upstream
// port; the client reaches it through the API for GitLab's proxy path. Every process on the path
// must stay up and give back what the case took; the cell sees a request at most once.
//
// What differs from a cell's route: no timeout bounds an agent's upstream (it may serve long
// polls, streams, WebSockets), so a stall lasts as long as its client waits, and the client's
// going away must reach the upstream. Over the per-request tunnel the agent's own proxy answers
// an upstream that failed before its answer began (502 upstream_unreachable, which edge passes
// on; the agent logs the cause).
func TestFaultMatrixTunnel(t *testing.T) {
	start := time.Now()
	cell := newFaultCell(t)
	c := newTunnelClusterWith(t, 2, func(cfg *edgeConfig) {
		cfg.Routing.TrustedProxies = []string{"127.0.0.1/32"} // the case's X-Request-Id names its lines
		cfg.Log.Level = "info"
	})
	holder, entry := c.edges[0], c.edges[1]
	spliced := c.startFaultAgent(t, "spliced", holder, cell.port(), false, "debug")
	perRequest := c.startFaultAgent(t, "per-request", holder, cell.port(), true, "debug")
	c.waitHeld(t, spliced.ID, holder, 15*time.Second)
	c.waitHeld(t, perRequest.ID, holder, 15*time.Second)
	t.Logf("setup: %v", time.Since(start).Round(time.Millisecond))

	paths := []tunnelFaultPath{
		{name: "per-request", agent: perRequest, perRequest: true, entry: holder},
		{name: "splice", agent: spliced, entry: holder},
		{name: "hop-splice", agent: spliced, entry: entry, holder: holder},
		{name: "hop-per-request", agent: perRequest, perRequest: true, entry: entry, holder: holder},
	}
	total := 0
	for _, tp := range paths {
		t.Run(tp.name, func(t *testing.T) {
			began := time.Now()
			get, post := c.faultPaths(tp.agent.ID, cell.port())
			m := newMatrix(cell, tp.entry.PublicURL, post, agentPath(tp.entry, tp.holder, tp.agent)...)
			m.stall, m.stallPatience, m.tag, m.slack = 0, time.Second, tp.name+".", 3
			t.Run("route", func(t *testing.T) { tp.checkRoute(t, m, get, post) })
			m.ctl = get
			m.cell.closeConns()
			start := m.procs.state(t)
			cases := m.runAll(t, get) + m.runAll(t, post)
			total += cases
			m.noDrift(t, start)
			t.Logf("%s: %d cases in %v", tp.name, cases, time.Since(began).Round(time.Millisecond))
		})
	}
	t.Logf("fault matrix over tunnels: %d cases over %d paths in %v", total, len(paths), time.Since(start).Round(time.Millisecond))
}

// startFaultAgent runs an agent held by holder for port, logging at level; perRequest gives it a
// tracing block, which keeps it on the per-request path (nothing is sampled: edge sends no trace,
// and the agent starts none).
func (c *tunnelCluster) startFaultAgent(t *testing.T, id string, holder *edgeProc, port int, perRequest bool, level string) *agentProc {
	t.Helper()
	token, ops := c.agentTokenFile(id), freeAddr(t)
	args := []string{"agent", "--edge", holder.PublicURL, "--token-file", token, "--ops", ops, "--log-level", level, "--allow-port", strconv.Itoa(port)}
	if perRequest {
		conf := filepath.Join(c.dir, id+".yaml")
		writeFile(t, conf, []byte(fmt.Sprintf("edge: %s\ntoken_file: %s\nallow_ports: [%d]\ntracing: {otlp_endpoint: \"http://127.0.0.1:9\", sample_ratio: 0}\n",
			holder.PublicURL, token, port)))
		args = append(args, "--config", conf)
	}
	a := &agentProc{ID: id, OpsURL: "http://" + ops, client: &http.Client{Timeout: time.Second}}
	a.process = startProcess(t, "agent "+id, exec.Command(edgeBinaryPath(), args...))
	c.mu.Lock()
	c.agents = append(c.agents, a)
	c.mu.Unlock()
	return a
}

// faultPaths are a GET and a POST with a body to the agent's port, through the API's proxy path.
func (c *tunnelCluster) faultPaths(agentID string, port int) (get, post faultPath) {
	auth := "Authorization: Bearer " + c.apiToken + "\r\n"
	get = faultPath{name: "get", method: http.MethodGet, target: "/-/api/v1" + proxyPath(agentID, port, "/api/v4/projects/1"), header: auth}
	post = faultPath{name: "post", method: http.MethodPost, target: "/-/api/v1" + proxyPath(agentID, port, "/api/v4/projects/1/issues"),
		header: auth, body: `{"title":"a fault"}`, once: true}
	return get, post
}

// routeCounts tell which way a path's requests went: the requests the agent proxied itself and
// the splice streams it relayed; at the holder, the connections it spliced for the entry edge
// and the requests it served for it.
type routeCounts struct{ proxied, streams, spliced, served float64 }

func (tp tunnelFaultPath) routeCounts(t *testing.T) routeCounts {
	t.Helper()
	var n routeCounts
	type counter struct {
		into          *float64
		url, name, of string
	}
	counters := []counter{
		{&n.proxied, tp.agent.OpsURL, "edge_agent_requests_total", `result="ok"`},
		{&n.streams, tp.agent.OpsURL, "edge_agent_requests_total", `result="splice"`},
	}
	if tp.holder != nil {
		counters = append(counters,
			counter{&n.spliced, tp.holder.OpsURL, "edge_internal_requests_total", `outcome="spliced"`},
			counter{&n.served, tp.holder.OpsURL, "edge_internal_requests_total", `outcome="served"`})
	}
	for _, c := range counters {
		v, err := metricSum(c.url+"/metrics", c.name, c.of)
		if err != nil {
			t.Fatalf("route counters: %v", err)
		}
		*c.into = v
	}
	return n
}

// checkRoute sends a GET and a POST on new connections to the cell (also the connections each
// takes, before the first case) and checks that they went the way the path's name says. The
// agent proxies requests or relays splice streams, never both; through a holder, a splicing
// agent's GET is spliced and its POST served as a request, a per-request agent's both served.
func (tp tunnelFaultPath) checkRoute(t *testing.T, m *matrix, get, post faultPath) {
	m.cell.closeConns()
	before := tp.routeCounts(t)
	for _, p := range []faultPath{get, post} {
		m.ctl = p
		m.control(t, tp.name+".route."+p.name)
	}
	now := tp.routeCounts(t)
	d := routeCounts{now.proxied - before.proxied, now.streams - before.streams, now.spliced - before.spliced, now.served - before.served}
	t.Logf("the agent proxied %v requests and relayed %v splice streams; the holder spliced %v connections and served %v requests", d.proxied, d.streams, d.spliced, d.served)
	want := routeCounts{proxied: 2}
	if !tp.perRequest {
		want = routeCounts{streams: 2}
	}
	if tp.holder != nil && tp.perRequest {
		want.served = 2
	}
	if tp.holder != nil && !tp.perRequest {
		want.spliced, want.served = 1, 1
	}
	if d != want {
		t.Errorf("got %+v, want %+v", d, want)
	}
}
