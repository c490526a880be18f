package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestTunnelEdgeKilled: when the edge holding an agent dies (kill -9, so it cleans nothing up),
// the agent reconnects through its load balancer to another edge, requests entering any live
// edge reach it again, and the dead edge's registry entries expire and stop being used.
func TestTunnelEdgeKilled(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 3)
	up := startUpstream(t, "a1")
	c.startAgentBehindBalancer(t, "a1", up)
	c.waitHeld(t, "a1", c.edges[0], 15*time.Second)
	for _, e := range c.edges {
		wantServedBy(t, c.echo(t, e, "a1", up), "a1")
	}

	killed := time.Now()
	c.edges[0].kill()
	dead := c.edges[0].InternalURL
	live := c.liveEdges()
	poll.Until(t, 30*time.Second, "a1 to connect to edge 1 again", func() bool {
		conns, err := c.connections(live[1], "a1")
		return err == nil && slices.ContainsFunc(conns, func(ci agentConnInfo) bool { return ci.Edge == live[0].InternalURL })
	})
	t.Logf("a1 registered at edge 1 %v after edge 0 was killed", time.Since(killed).Round(time.Millisecond))

	// Until it expires, the dead edge's entry is still in the registry. A request entering
	// edge 2 may find it first; the dead holder cannot have read any of the request (nothing
	// listens there), so the entry edge should go on to the live holder rather than fail.
	var gone time.Duration
	t.Run("while the dead edge is still listed", func(t *testing.T) {
		isDead := func(ci agentConnInfo) bool { return ci.Edge == dead }
		var lastProbe time.Time
		var probes, failed int
		var firstFailure string
		// It expires by its TTL (at most ttl+refresh after the kill when nothing is late); the
		// deadline is generous, the only time bound.
		poll.Until(t, 3*(registryTTL+registryRefresh), "the dead edge's entry to leave the registry", func() bool {
			conns, err := c.connections(live[1], "a1")
			if err != nil {
				return false
			}
			if !slices.ContainsFunc(conns, isDead) {
				return true
			}
			if time.Since(lastProbe) > 250*time.Millisecond {
				lastProbe = time.Now()
				a, err := trySendAPI(c, live[1], "a1", up)
				probes++
				if err != nil || a.status != http.StatusOK {
					failed++
					if firstFailure == "" {
						firstFailure = fmt.Sprintf("%d %s %v", a.status, a.body, err)
					}
				}
			}
			return false
		})
		gone = time.Since(killed)
		t.Logf("the dead edge's entry was gone %v after the kill", gone.Round(time.Millisecond))
		if failed > 0 {
			t.Errorf("%d of %d requests entering edge 2 for a1 failed though a1 was connected to edge 1 (want the entry edge to skip an unreachable holder); first: %s",
				failed, probes, firstFailure)
		}
	})
	t.Run("after the dead edge's entry expired", func(t *testing.T) {
		if gone == 0 {
			t.Fatalf("the dead edge's entry did not expire")
		}
		for _, e := range live {
			if !c.heldBy(e, "a1", live[0]) {
				conns, err := c.connections(e, "a1")
				t.Errorf("%s lists a1 at: %+v %v, want edge 1 (%s) only", c.edgeName(e), conns, err, live[0].InternalURL)
			}
			wantServedBy(t, c.echo(t, e, "a1", up), "a1")
		}
	})
}

// TestTunnelRedisFlushall: after FLUSHALL every edge registers its live connections again by
// itself (normally within one refresh period; the log line says how long it took).
func TestTunnelRedisFlushall(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 3)
	ups := map[string]*upstream{"a1": startUpstream(t, "a1"), "a2": startUpstream(t, "a2")}
	c.startAgent("a1", c.edges[0].PublicURL, ups["a1"])
	c.startAgent("a2", c.edges[1].PublicURL, ups["a2"])
	c.waitHeld(t, "a1", c.edges[0], 15*time.Second)
	c.waitHeld(t, "a2", c.edges[1], 15*time.Second)

	if reply, err := c.redis.do("FLUSHALL"); err != nil || reply != "+OK" {
		t.Fatalf("FLUSHALL: %q %v", reply, err)
	}
	flushed := time.Now()
	if reply, err := c.redis.do("DBSIZE"); err != nil || reply != ":0" {
		t.Logf("DBSIZE right after FLUSHALL: %q %v (an edge wrote already)", reply, err)
	}
	// A generous deadline, the only time bound: a busy machine can delay a refresh.
	poll.Until(t, 10*registryRefresh, "edge 2 to list a1 and a2 again after FLUSHALL", func() bool {
		return c.heldBy(c.edges[2], "a1", c.edges[0]) && c.heldBy(c.edges[2], "a2", c.edges[1])
	})
	t.Logf("a1 and a2 listed again %v after FLUSHALL", time.Since(flushed).Round(time.Millisecond))
	for _, e := range c.edges {
		for id, up := range ups {
			wantServedBy(t, c.echo(t, e, id, up), id)
		}
	}
}

// TestTunnelRedisDown: with Redis stopped, an edge still serves the agents it holds, answers
// 503 with Retry-After for agents held elsewhere, stays ready, and recovers by
// itself when redis-server is started again on the same port.
func TestTunnelRedisDown(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 2)
	ups := map[string]*upstream{"a1": startUpstream(t, "a1"), "a2": startUpstream(t, "a2")}
	c.startAgent("a1", c.edges[0].PublicURL, ups["a1"])
	c.startAgent("a2", c.edges[1].PublicURL, ups["a2"])
	c.waitHeld(t, "a1", c.edges[0], 15*time.Second)
	c.waitHeld(t, "a2", c.edges[1], 15*time.Second)
	entry := c.edges[0]

	c.redis.stop()
	stopped := time.Now()
	t.Run("local agent served", func(t *testing.T) {
		wantServedBy(t, c.echo(t, entry, "a1", ups["a1"]), "a1")
	})
	t.Run("remote agent 503", func(t *testing.T) {
		// Answered (by agents.wait at the latest), not left hanging: trySendAPI's deadline is
		// the only time bound.
		start := time.Now()
		a, err := trySendAPI(c, entry, "a2", ups["a2"])
		took := time.Since(start)
		if err != nil {
			t.Fatalf("edge 0 -> a2: %v", err)
		}
		if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
			t.Errorf("edge 0 -> a2: got %d Retry-After %q %s, want 503 with Retry-After", a.status, a.header.Get("Retry-After"), a.body)
		}
		t.Logf("503 for a2 after %v", took.Round(time.Millisecond))
	})
	t.Run("connections API 503", func(t *testing.T) {
		status, h, body, err := c.get(entry, "/agents/a1/connections")
		if err != nil || status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
			t.Errorf("connections: got %d Retry-After %q %s %v, want 503 with Retry-After", status, h.Get("Retry-After"), body, err)
		}
	})
	t.Run("still ready, registry reported unhealthy", func(t *testing.T) {
		poll.Until(t, 2*registryRefresh+3*time.Second, "/readyz to report the registry unhealthy", func() bool {
			status, body := readyz(t, entry)
			if status != http.StatusOK {
				t.Fatalf("readyz with Redis down: got %d %+v, want 200", status, body)
			}
			return body.RegistryHealthy != nil && !*body.RegistryHealthy
		})
	})
	t.Logf("checks with Redis down took %v", time.Since(stopped).Round(time.Millisecond))

	c.redis.start()
	restarted := time.Now()
	poll.Until(t, 3*registryRefresh+5*time.Second, "edge 0 to reach a2 again after Redis came back", func() bool {
		a, err := trySendAPI(c, entry, "a2", ups["a2"])
		return err == nil && a.status == http.StatusOK
	})
	t.Logf("edge 0 reached a2 again %v after redis-server was started again", time.Since(restarted).Round(time.Millisecond))
	poll.Until(t, 2*registryRefresh+3*time.Second, "/readyz to report the registry healthy again", func() bool {
		_, body := readyz(t, entry)
		return body.RegistryHealthy != nil && *body.RegistryHealthy
	})
	for _, e := range c.edges {
		for id, up := range ups {
			wantServedBy(t, c.echo(t, e, id, up), id)
		}
	}
}

// echo sends a small POST /echo to agent id through edge e.
func (c *tunnelCluster) echo(t *testing.T, e *edgeProc, id string, up *upstream) answer {
	t.Helper()
	a, err := trySendAPI(c, e, id, up)
	if err != nil {
		t.Fatalf("%s -> %s: %v", c.edgeName(e), id, err)
	}
	return a
}

func trySendAPI(c *tunnelCluster, e *edgeProc, id string, up *upstream) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return trySend(ctx, c.client, apiBase(e), outgoing{
		method: http.MethodPost, path: proxyPath(id, up.Port, "/echo"), header: c.authHeader(), body: []byte("ping " + id),
	})
}

// readyBody is /readyz's answer.
type readyBody struct {
	Ready           bool  `json:"ready"`
	RegistryHealthy *bool `json:"registry_healthy"`
}

func readyz(t *testing.T, e *edgeProc) (int, readyBody) {
	t.Helper()
	res, err := http.Get(e.OpsURL + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	defer res.Body.Close()
	var body readyBody
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("readyz body: %v", err)
	}
	return res.StatusCode, body
}
