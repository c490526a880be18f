package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

// Registry timings of the tunnel tests: short, so expiry and refresh show within seconds.
const (
	registryTTL     = 5 * time.Second
	registryRefresh = 2 * time.Second
	agentWait       = 5 * time.Second
)

// tunnelCluster is edges sharing one redis-server (or one edge with the in-memory registry), the
// secrets they share, and the agents started against them.
type tunnelCluster struct {
	t        *testing.T
	dir      string
	redis    *redisServer // nil: one edge, in-memory registry
	edges    []*edgeProc
	apiToken string
	client   *http.Client

	internalSecret, agentSecret, apiSecret []byte
	agentKeyFile                           string

	mu     sync.Mutex
	agents []*agentProc
	tokens []string // every token a test sent, to check that no process printed one
}

// newTunnelCluster starts redis-server and n edges sharing it, with agents.wait agentWait and
// registry TTL and refresh registryTTL and registryRefresh.
func newTunnelCluster(t *testing.T, n int) *tunnelCluster {
	t.Helper()
	return newTunnelClusterWith(t, n, nil)
}

// newTunnelClusterWith is newTunnelCluster with configure applied to each edge's config.
func newTunnelClusterWith(t *testing.T, n int, configure func(*edgeConfig)) *tunnelCluster {
	t.Helper()
	c := &tunnelCluster{t: t, dir: t.TempDir(), client: newClient(16)}
	c.internalSecret = c.writeSecret("internal.key")
	c.agentSecret = c.writeSecret("agent.key")
	c.apiSecret = c.writeSecret("api.key")
	c.agentKeyFile = filepath.Join(c.dir, "agent.key")
	c.redis = startRedis(t)
	for range n {
		cfg := c.newEdgeConfig()
		if configure != nil {
			configure(&cfg)
		}
		c.edges = append(c.edges, startEdge(t, cfg))
	}
	tok, err := tokens.MintGitLabAPIToken(c.apiSecret, "gitlab", "gitlab-kas", time.Now(), time.Hour)
	if err != nil {
		t.Fatalf("MintGitLabAPIToken: %v", err)
	}
	c.apiToken = c.noteToken(tok)
	t.Cleanup(c.checkNoTokenPrinted)
	return c
}

// newEdgeConfig is one edge's config: listeners but public and ops, the cluster's Redis and secrets.
func (c *tunnelCluster) newEdgeConfig() edgeConfig {
	return edgeConfig{
		Listen: listenConfig{Internal: freeAddr(c.t)},
		Cells:  []cellConfig{{ID: 1, URL: "http://127.0.0.1:9", Legacy: true}},
		Tokens: tokensConfig{JobJWT: jobJWTConfig{Verify: false}},
		Registry: &registryConfig{
			Redis: redisConfig{Addr: c.redis.Addr, KeyPrefix: "edge"},
			TTL:   registryTTL.String(), Refresh: registryRefresh.String(),
		},
		Internal:  &secretConfig{SecretFile: filepath.Join(c.dir, "internal.key")},
		Agents:    &agentsConfig{Keys: []keyConfig{{Alg: "HS256", File: c.agentKeyFile}}, Wait: agentWait.String()},
		GitLabAPI: &secretConfig{SecretFile: filepath.Join(c.dir, "api.key")},
		Log:       logConfig{Level: "debug", Format: "text"},
	}
}

// writeSecret writes a random 64-character secret to dir/name and returns it.
func (c *tunnelCluster) writeSecret(name string) []byte {
	c.t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	secret := []byte(hex.EncodeToString(b))
	if err := os.WriteFile(filepath.Join(c.dir, name), append(secret, '\n'), 0o600); err != nil {
		c.t.Fatalf("write %s: %v", name, err)
	}
	return secret
}

// agentTokenFile mints an agent token with `edge token mint agent` and writes it to a file.
func (c *tunnelCluster) agentTokenFile(agentID string, extra ...string) string {
	c.t.Helper()
	args := append([]string{"token", "mint", "agent", "--key", c.agentKeyFile, "--agent-id", agentID, "--ttl", "1h"}, extra...)
	stdout, stderr, code := runEdge(c.t, args...)
	if code != 0 {
		c.t.Fatalf("edge token mint agent: exit %d: %s", code, stderr)
	}
	return c.tokenFile(agentID, strings.TrimSpace(stdout))
}

// tokenFile writes token to a file for `edge agent --token-file`.
func (c *tunnelCluster) tokenFile(name, token string) string {
	c.t.Helper()
	path := filepath.Join(c.dir, name+".tok")
	if err := os.WriteFile(path, []byte(c.noteToken(token)+"\n"), 0o600); err != nil {
		c.t.Fatalf("write token: %v", err)
	}
	return path
}

// startAgent runs `edge agent` for agentID against edgeURL with a token minted for it (extra:
// more `edge token mint agent` flags), serving up's port.
func (c *tunnelCluster) startAgent(agentID, edgeURL string, up *upstream, extra ...string) *agentProc {
	c.t.Helper()
	return c.startAgentWithToken(agentID, edgeURL, c.agentTokenFile(agentID, extra...), up)
}

// startAgentWithToken runs `edge agent` with the token in tokenFile, serving up's port.
func (c *tunnelCluster) startAgentWithToken(name, edgeURL, tokenFile string, up *upstream) *agentProc {
	c.t.Helper()
	a := startAgentProc(c.t, name, edgeURL, tokenFile, up.Port)
	c.mu.Lock()
	c.agents = append(c.agents, a)
	c.mu.Unlock()
	return a
}

// noteToken remembers a token to look for in every process's output at the end.
func (c *tunnelCluster) noteToken(tok string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens = append(c.tokens, tok)
	return tok
}

// checkNoTokenPrinted stops every process and looks for a piece of any token's signature in
// their output (the header and claims of a JWT are not secret).
func (c *tunnelCluster) checkNoTokenPrinted() {
	var procs []*process
	c.mu.Lock()
	for _, a := range c.agents {
		procs = append(procs, a.process)
	}
	toks := slices.Clone(c.tokens)
	c.mu.Unlock()
	for _, e := range c.edges {
		procs = append(procs, e.process)
	}
	for _, p := range procs {
		p.stop(10 * time.Second)
		out := p.out.String()
		for _, tok := range toks {
			sig := tok[strings.LastIndex(tok, ".")+1:]
			if piece := leakedPart(sig, out); piece != "" {
				c.t.Errorf("%s printed a piece of a token's signature", p.name)
			}
		}
	}
}

// agentConnInfo is one entry of the connections API's answer.
type agentConnInfo struct {
	AgentID      string    `json:"agent_id"`
	ProjectID    string    `json:"project_id"`
	ConnectionID string    `json:"connection_id"`
	Version      string    `json:"version"`
	Commit       string    `json:"commit"`
	PodNamespace string    `json:"pod_namespace"`
	PodName      string    `json:"pod_name"`
	ConnectedAt  time.Time `json:"connected_at"`
	Edge         string    `json:"edge"`
}

// apiRequest builds a request to the API for GitLab on edge e, with the API JWT.
func (c *tunnelCluster) apiRequest(ctx context.Context, e *edgeProc, method, path string, body io.Reader) *http.Request {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, e.PublicURL+"/-/api/v1"+path, body)
	if err != nil {
		c.t.Fatalf("request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.apiToken)
	return req
}

// proxyPath is the API path that proxies to port of agentID's upstream.
func proxyPath(agentID string, port int, path string) string {
	return fmt.Sprintf("/agents/%s/proxy/%d%s", agentID, port, path)
}

// get sends a GET through the API for GitLab on e and returns the status, headers and body.
func (c *tunnelCluster) get(e *edgeProc, path string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.client.Do(c.apiRequest(ctx, e, http.MethodGet, path, nil))
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b, err
}

// connections asks edge e which connections agentID has.
func (c *tunnelCluster) connections(e *edgeProc, agentID string) ([]agentConnInfo, error) {
	return c.listConnections(e, "/agents/"+agentID+"/connections")
}

func (c *tunnelCluster) listConnections(e *edgeProc, path string) ([]agentConnInfo, error) {
	status, _, body, err := c.get(e, path)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, status, body)
	}
	var out struct {
		Connections []agentConnInfo `json:"connections"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET %s: %w: %s", path, err, body)
	}
	return out.Connections, nil
}

// heldBy tells whether e lists agentID as connected to holder only (one connection or more).
func (c *tunnelCluster) heldBy(e *edgeProc, agentID string, holder *edgeProc) bool {
	conns, err := c.connections(e, agentID)
	if err != nil || len(conns) == 0 {
		return false
	}
	for _, ci := range conns {
		if ci.Edge != holder.InternalURL || ci.AgentID != agentID {
			return false
		}
	}
	return true
}

// waitHeld polls every edge's connections API until each lists agentID at holder only.
func (c *tunnelCluster) waitHeld(t *testing.T, agentID string, holder *edgeProc, timeout time.Duration) {
	t.Helper()
	poll.Until(t, timeout, fmt.Sprintf("every edge to list %s at %s", agentID, holder.InternalURL), func() bool {
		for _, e := range c.edges {
			if !c.heldBy(e, agentID, holder) {
				return false
			}
		}
		return true
	})
}

// liveEdges are the edges whose process has not exited.
func (c *tunnelCluster) liveEdges() []*edgeProc {
	var out []*edgeProc
	for _, e := range c.edges {
		select {
		case <-e.exited:
		default:
			out = append(out, e)
		}
	}
	return out
}

// edgeName is "edge N" for the logs.
func (c *tunnelCluster) edgeName(e *edgeProc) string {
	return fmt.Sprintf("edge %d", slices.Index(c.edges, e))
}

// startAgentBehindBalancer connects agentID through a TCP load balancer in front of every edge,
// so that it can reconnect to another edge when the one holding it goes away.
func (c *tunnelCluster) startAgentBehindBalancer(t *testing.T, agentID string, up *upstream) *tcpBalancer {
	t.Helper()
	var backends []string
	for _, e := range c.edges {
		backends = append(backends, strings.TrimPrefix(e.PublicURL, "http://"))
	}
	lb := startBalancer(t, backends...)
	c.startAgent(agentID, lb.URL(), up)
	return lb
}
