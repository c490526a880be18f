package integration

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestAgentConnectionLimits: with agents.max_connections 3, a fourth connection of one agent
// token gets 429 before any upgrade and is counted; upgrades that never do the tunnel handshake
// take no request from the real agent, whose requests all succeed, and the edge closes them at its
// handshake deadline (5 s). A reload raises the cap for new connects.
func TestAgentConnectionLimits(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 0)
	cfg := c.newEdgeConfig()
	cfg.Agents.MaxConnections = 3
	// Written out whole, so that the reload below changes max_connections alone.
	cfg.Listen.Public, cfg.Listen.Ops = freeAddr(t), freeAddr(t)
	cfg.Listen.AdvertiseInternal = "http://" + cfg.Listen.Internal
	cfg.Shutdown.Grace = "5s"
	e := startEdge(t, cfg)
	c.edges = append(c.edges, e)
	up := startUpstream(t, "a1")
	tokenFile := c.agentTokenFile("a1")
	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	c.startAgentWithToken("a1", e.PublicURL, tokenFile, up)
	c.waitHeld(t, "a1", e, 15*time.Second)
	metric := func(name, match string) float64 {
		v, err := metricSum(e.OpsURL+"/metrics", name, match)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	requestsSucceed := func(when string) {
		t.Helper()
		for range 10 {
			a, err := trySendAPI(c, e, "a1", up)
			if err != nil || a.status != http.StatusOK {
				t.Fatalf("%s: request to a1: %d %s %v, want 200", when, a.status, a.body, err)
			}
		}
	}

	// The agent holds one connection; two silent upgrades take the other two places.
	var silent []net.Conn
	for i := range 2 {
		status, _, conn := dialConnect(t, e, "", token, nil)
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("silent upgrade %d: got %d, want 101", i+1, status)
		}
		silent = append(silent, conn)
	}
	req, _ := http.NewRequest(http.MethodGet, e.PublicURL+"/-/agent/connect", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "edge-tunnel")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var refusal struct{ Error, Message string }
	json.Unmarshal(body, &refusal)
	if res.StatusCode != http.StatusTooManyRequests || refusal.Error != "too_many_connections" || res.Header.Get("Retry-After") == "" {
		t.Fatalf("fourth connection: got %d %s (Retry-After %q), want 429 too_many_connections with Retry-After",
			res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	if v := metric("edge_tunnel_connects_total", `result="too_many_connections"`); v != 1 {
		t.Errorf("edge_tunnel_connects_total{result=too_many_connections}: got %v, want 1", v)
	}
	if conns, err := c.connections(e, "a1"); err != nil || len(conns) != 1 {
		t.Errorf("a1's listed connections: got %d %v, want only the agent's own", len(conns), err)
	}
	requestsSucceed("with two silent upgrades pending")

	// A reload raises the cap; 50 more silent upgrades of the same token are let in and take no
	// request either.
	cfg.Agents.MaxConnections = 60
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.ConfigPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.cmd.Process.Signal(syscall.SIGHUP)
	poll.Until(t, 10*time.Second, "the reload", func() bool { return metric("edge_config_generation", "") == 2 })
	for i := range 50 {
		status, _, conn := dialConnect(t, e, "", token, nil)
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("silent upgrade %d after the reload: got %d, want 101", i+1, status)
		}
		silent = append(silent, conn)
	}
	if v := metric("edge_tunnel_handshakes", ""); v < 50 {
		t.Errorf("edge_tunnel_handshakes: got %v, want the 50 pending at least", v)
	}
	if v := metric("edge_tunnel_connections", ""); v != 1 {
		t.Errorf("edge_tunnel_connections: got %v, want 1 (the agent)", v)
	}
	requestsSucceed("with 50 silent upgrades pending")

	// At the deadline the edge closes every one of them.
	for i, conn := range silent {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("silent upgrade %d still open 10 s on", i+1)
		}
		conn.Close()
	}
	poll.Until(t, 5*time.Second, "52 handshake timeouts counted", func() bool {
		return metric("edge_tunnel_connects_total", `result="handshake_timeout"`) == 52 && metric("edge_tunnel_handshakes", "") == 0
	})
	if v := metric("edge_tunnel_connects_total", `result="ok"`); v != 1 {
		t.Errorf("edge_tunnel_connects_total{result=ok}: got %v, want 1 (the agent)", v)
	}
	requestsSucceed("after the deadline")
}
