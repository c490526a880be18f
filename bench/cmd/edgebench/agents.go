package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gitlab.com/edge/edge/bench"
)

// The tunnel cases' secrets and the agent's token, in the harness's directory (0600).
const (
	agentKeyFile    = "agent.key"    // HS256 secret of agent tokens
	apiKeyFile      = "api.key"      // HS256 secret of the API for GitLab
	internalKeyFile = "internal.key" // the edges' shared secret
	agentTokenFile  = "agent.tok"
)

// prepareAgents writes the secrets and mints the agent's token and the API token with edge's own
// `edge token mint` (the spec gives no test vectors for these two kinds to check a second
// implementation against). The tokens are written to files or kept in memory, never printed.
func (h *harness) prepareAgents(ctx context.Context) error {
	for _, name := range []string{agentKeyFile, apiKeyFile, internalKeyFile} {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		if err := os.WriteFile(h.path(name), []byte(hex.EncodeToString(b[:])), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	agentTok, err := h.mint(ctx, "agent", "--key", h.path(agentKeyFile), "--agent-id", agentID, "--ttl", "24h")
	if err != nil {
		return err
	}
	if err := os.WriteFile(h.path(agentTokenFile), []byte(agentTok+"\n"), 0o600); err != nil {
		return fmt.Errorf("write agent token: %w", err)
	}
	h.tokens.api, err = h.mint(ctx, "gitlab-api", "--secret-file", h.path(apiKeyFile), "--ttl", "24h")
	return err
}

// mint runs `edge token mint KIND ARGS...` and returns the token.
func (h *harness) mint(ctx context.Context, kind string, args ...string) (string, error) {
	return bench.EdgeToken(ctx, h.edgeBin, kind, args...)
}

func (h *harness) path(name string) string { return filepath.Join(h.dir, name) }

// edgeAgents is the agent part of an edge's config: the holder accepts the agent; with a second
// edge, both share the registry in Redis and the internal secret, and listen for each other.
func (h *harness) edgeAgents(holder bool) (bench.EdgeAgents, error) {
	a := bench.EdgeAgents{APISecretFile: h.path(apiKeyFile)}
	if holder {
		a.AgentKeyFile = h.path(agentKeyFile)
	}
	if needsSecondEdge(h.opts.cases) {
		a.RedisAddr, a.InternalSecretFile = h.redisAddr, h.path(internalKeyFile)
		var err error
		if a.InternalPort, err = bench.FreePort(); err != nil {
			return a, err
		}
	}
	return a, nil
}

// startRedis runs a redis-server without persistence for the registry the two edges share.
func (h *harness) startRedis(ctx context.Context) error {
	port, err := bench.FreePort()
	if err != nil {
		return err
	}
	h.redisAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p, err := h.sup.Start("redis", h.pinned(h.opts.serverCPU, h.tools.redis, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"), bench.StartOptions{})
	if err != nil {
		return err
	}
	h.redis = p
	if err := p.WaitReady(ctx, startTimeout, func() (bool, error) { return bench.RedisPing(h.redisAddr) == nil, nil }); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// startEdge2 starts the entry edge of the hop: same cells, no agent of its own.
func (h *harness) startEdge2(ctx context.Context, jwtPub string) error {
	agents, err := h.edgeAgents(false)
	if err != nil {
		return err
	}
	p, pub, _, err := h.startEdgeProc(ctx, "edge2", jwtPub, bench.EdgeOptions{Agents: agents})
	if err != nil {
		return err
	}
	h.edge2, h.edge2Port = p, pub
	return nil
}

// startAgent starts `edge agent` against the first edge, serving the upstream's first listener,
// and waits until every edge of the run lists its connection (the second edge reads it from
// Redis, so the hop is known to be possible before it is measured).
func (h *harness) startAgent(ctx context.Context) error {
	p, err := h.sup.Start("agent", h.pinned(h.opts.serverCPU, h.edgeBin, "agent",
		"--edge", fmt.Sprintf("http://127.0.0.1:%d", h.edgePort), "--token-file", h.path(agentTokenFile),
		"--allow-port", strconv.Itoa(h.upstreamPorts[0]), "--log-level", "warn"), bench.StartOptions{})
	if err != nil {
		return err
	}
	h.agent = p
	ports := []int{h.edgePort}
	if h.edge2 != nil {
		ports = append(ports, h.edge2Port)
	}
	for _, port := range ports {
		url := fmt.Sprintf("http://127.0.0.1:%d/-/api/v1/agents/%s/connections", port, agentID)
		lastErr := fmt.Errorf("no answer")
		err := p.WaitReady(ctx, startTimeout, func() (bool, error) {
			n, err := h.agentConnections(ctx, url)
			lastErr = err
			return n > 0, nil
		})
		if err != nil {
			return fmt.Errorf("agent: not listed by the edge on port %d: %w (last: %v)", port, err, lastErr)
		}
	}
	return nil
}

// agentConnections asks an edge's API for GitLab how many connections the agent has.
func (h *harness) agentConnections(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+h.tokens.api)
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s", resp.Status)
	}
	return parseConnections(b)
}

// parseConnections counts the connections in the API's {"connections": [...]} answer.
func parseConnections(b []byte) (int, error) {
	var doc struct {
		Connections *[]json.RawMessage `json:"connections"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return 0, fmt.Errorf("connections answer: %w", err)
	}
	if doc.Connections == nil {
		return 0, fmt.Errorf("connections answer has no connections list")
	}
	return len(*doc.Connections), nil
}
