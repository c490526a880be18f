package integration

import (
	"context"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestTunnelEdgeDrained: SIGTERM on the edge that holds an agent removes its registry entries
// before it exits (not left to expire), the agent is asked to reconnect and does so to another
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
	// The drain removes the edge's entries itself, before the edge exits: once it has exited,
	// no other edge lists it (left to expire, an entry would outlive the edge by up to the TTL).
	if code, err := drained.wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("drained edge: exit code %d, %v; want 0", code, err)
	}
	t.Logf("the drained edge exited %v after SIGTERM (TTL %v)", time.Since(start).Round(time.Millisecond), registryTTL)
	if conns, err := c.connections(other, "a1"); err != nil || slices.ContainsFunc(conns, func(ci agentConnInfo) bool { return ci.Edge == drained.InternalURL }) {
		t.Errorf("after the drained edge exited, %s lists a1 at %+v (%v), want the drained edge gone", c.edgeName(other), conns, err)
	}
	poll.Until(t, 30*time.Second, "a1 to connect to a live edge", func() bool {
		conns, err := c.connections(other, "a1")
		return err == nil && len(conns) > 0
	})
	for _, e := range c.edges[1:] {
		wantServedBy(t, c.echo(t, e, "a1", up), "a1")
	}
}

// TestTunnelDrainFinishesRequestsInFlight: requests through the holder's tunnel that are in
// flight when it gets SIGTERM, entering it directly or through another edge, still get their
// answers; the holder exits 0 afterwards.
func TestTunnelDrainFinishesRequestsInFlight(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 2)
	up := startUpstream(t, "a1")
	c.startAgentBehindBalancer(t, "a1", up)
	holder, other := c.edges[0], c.edges[1]
	c.waitHeld(t, "a1", holder, 15*time.Second)

	type result struct {
		via string
		a   answer
		err error
	}
	results := make(chan result, 2)
	for _, e := range []*edgeProc{holder, other} {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, err := trySend(ctx, c.client, apiBase(e), outgoing{method: http.MethodGet,
				path: proxyPath("a1", up.Port, "/slow"), header: c.authHeader()})
			results <- result{c.edgeName(e), a, err}
		}()
	}
	// In order: both requests are at the upstream, the holder gets SIGTERM and is draining,
	// then the upstream answers.
	poll.Until(t, 20*time.Second, "both requests to reach the upstream", func() bool { return up.slow.Load() == 2 })
	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the holder to drain (/readyz 503)", func() bool {
		res, err := http.Get(holder.OpsURL + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusServiceUnavailable
	})
	up.releaseSlow()
	for range 2 {
		r := <-results
		if r.err != nil || r.a.status != http.StatusOK || string(r.a.body) != "done" {
			t.Errorf("request via %s in flight during the drain: %d %q %v, want 200 done", r.via, r.a.status, r.a.body, r.err)
		}
	}
	if code, err := holder.wait(15 * time.Second); err != nil || code != 0 {
		t.Errorf("drained holder: exit code %d, %v; want 0", code, err)
	}
}
