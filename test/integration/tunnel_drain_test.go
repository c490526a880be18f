package integration

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestTunnelEdgeDrained: SIGTERM on the edge that holds an agent removes its registry entries at
// once (long before they would expire), the agent is asked to reconnect and does so to another
// edge, requests entering any live edge reach it again, and the drained edge exits 0.
func TestTunnelEdgeDrained(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 3)
	up := startUpstream(t, "a1")
	c.startAgentBehindBalancer(t, "a1", up)
	c.waitHeld(t, "a1", c.edges[0], 15*time.Second)

	drained := c.edges[0]
	start := time.Now()
	if err := drained.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	other := c.edges[1]
	waitUntil(t, registryTTL/2, "the drained edge's entries to leave the registry", func() bool {
		conns, err := c.connections(other, "a1")
		return err == nil && !slices.ContainsFunc(conns, func(ci agentConnInfo) bool { return ci.Edge == drained.InternalURL })
	})
	t.Logf("entries of the drained edge gone %v after SIGTERM (TTL %v)", time.Since(start).Round(time.Millisecond), registryTTL)
	if code, err := drained.wait(15 * time.Second); err != nil || code != 0 {
		t.Fatalf("drained edge: exit code %d, %v; want 0", code, err)
	}
	waitUntil(t, 30*time.Second, "a1 to connect to a live edge", func() bool {
		conns, err := c.connections(other, "a1")
		return err == nil && len(conns) > 0
	})
	for _, e := range c.edges[1:] {
		wantServedBy(t, c.echo(t, e, "a1", up), "a1")
	}
}
