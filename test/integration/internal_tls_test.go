package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInternalTLS: edges whose internal listeners serve TLS and verify each other with a CA file:
// a request entering edge 1 reaches the agent held by edge 0 over https edge to edge; an edge
// that does not trust the CA cannot (its forward fails, the agent is not reachable through it).
func TestInternalTLS(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 0)
	pki := writeKubePKI(t, t.TempDir()) // a serving certificate for 127.0.0.1
	for i := range 3 {
		cfg := c.newEdgeConfig()
		cfg.Internal.TLS = &staticTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile}
		if i < 2 {
			cfg.Internal.CAFile = pki.caFile
		}
		cfg.Listen.AdvertiseInternal = "https://" + cfg.Listen.Internal
		c.edges = append(c.edges, startEdge(t, cfg))
	}
	if !strings.HasPrefix(c.edges[0].InternalURL, "https://") {
		t.Fatalf("advertised %s", c.edges[0].InternalURL)
	}
	up := startUpstream(t, "a1")
	c.startAgent("a1", c.edges[0].PublicURL, up)
	c.waitHeld(t, "a1", c.edges[0], 15*time.Second)

	a := c.echo(t, c.edges[1], "a1", up)
	if a.status != http.StatusOK {
		t.Fatalf("edge 1 to the agent on edge 0 over internal TLS: %d %s", a.status, a.body)
	}
	// A request without a body crosses over a spliced connection, over TLS too.
	get := func(e *edgeProc) (answer, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return trySend(ctx, c.client, apiBase(e), outgoing{method: http.MethodGet, path: proxyPath("a1", up.Port, "/headers"), header: c.authHeader()})
	}
	if a, err := get(c.edges[1]); err != nil || a.status != http.StatusOK {
		t.Fatalf("GET through edge 1 over internal TLS: %d %s %v", a.status, a.body, err)
	}
	if n, err := metricSum(c.edges[0].OpsURL+"/metrics", "edge_internal_requests_total", `outcome="spliced"`); err != nil || n == 0 {
		t.Errorf("spliced connections at the holder over internal TLS: %v %v, want some", n, err)
	}
	// Edge 2 has no CA for the internal listeners: the holder cannot be verified, so it is never
	// sent the request (and the internal JWT), spliced or not.
	start := time.Now()
	a, err := trySendAPI(c, c.edges[2], "a1", up)
	if err == nil && a.status == http.StatusOK {
		t.Errorf("an edge without the CA reached the holder: %d", a.status)
	}
	if a, err := get(c.edges[2]); err == nil && a.status == http.StatusOK {
		t.Errorf("an edge without the CA reached the holder with a GET: %d", a.status)
	}
	t.Logf("without the CA: %d after %v", a.status, time.Since(start).Round(time.Millisecond))
}
