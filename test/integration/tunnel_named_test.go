package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestTunnelNamedConnection: with two connections of one agent held by two edges (each serving
// its own upstream port), a request through the API's connection-named path goes down exactly
// that connection, from any entry edge; an unknown connection waits, then 504.
func TestTunnelNamedConnection(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 3)
	upX, upY := startUpstream(t, "x"), startUpstream(t, "y")
	token := c.agentTokenFile("a1")
	c.startAgentWithToken("a1 via edge 0", c.edges[0].PublicURL, token, upX)
	c.startAgentWithToken("a1 via edge 1", c.edges[1].PublicURL, token, upY)
	byEdge := map[string]string{}
	poll.Until(t, 15*time.Second, "both connections of a1 to be listed", func() bool {
		conns, err := c.connections(c.edges[2], "a1")
		if err != nil || len(conns) != 2 {
			return false
		}
		for _, ci := range conns {
			byEdge[ci.Edge] = ci.ConnectionID
		}
		return len(byEdge) == 2
	})
	connX, connY := byEdge[c.edges[0].InternalURL], byEdge[c.edges[1].InternalURL]
	if connX == "" || connY == "" {
		t.Fatalf("connections by holder: %v", byEdge)
	}
	send := func(e *edgeProc, conn string, port int) answer {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a, err := trySend(ctx, c.client, apiBase(e), outgoing{method: http.MethodPost,
			path: fmt.Sprintf("/agents/a1/connections/%s/proxy/%d/echo", conn, port), header: c.authHeader(), body: []byte("ping")})
		if err != nil {
			t.Fatalf("%s via connection %s: %v", c.edgeName(e), conn, err)
		}
		return a
	}
	for _, e := range c.edges {
		wantServedBy(t, send(e, connX, upX.Port), "x")
		wantServedBy(t, send(e, connY, upY.Port), "y")
		// Connection x's agent serves only x's port: a 403 shows the request went down x, where
		// "any connection" could have picked y and got 200.
		if a := send(e, connX, upY.Port); a.status != http.StatusForbidden {
			t.Errorf("%s: connection x asked for y's port: got %d %s, want 403 from agent x", c.edgeName(e), a.status, a.body)
		}
	}
	start := time.Now()
	if a := send(c.edges[2], "NOSUCHCONNECTION", upX.Port); a.status != http.StatusGatewayTimeout {
		t.Errorf("unknown connection: got %d %s, want 504", a.status, a.body)
	} else if took := time.Since(start); took < agentWait {
		t.Errorf("unknown connection answered after %v, want after agents.wait (%v)", took, agentWait)
	}
}
