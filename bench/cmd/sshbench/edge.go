package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gitlab.com/edge/edge/bench"
	"gitlab.com/edge/edge/tokens"
)

// edgeSide is edge with its agent, in front of the workspace's sshd.
type edgeSide struct {
	edge, agent *bench.Proc
	sshPort     int
	hostKey     string // authorized_keys format
	token       string // the workspace user's personal access token: the SSH password
}

// tails is the end of both logs, for an error.
func (e *edgeSide) tails() string {
	return "edge:\n" + e.edge.Tail(4000) + "\nagent:\n" + e.agent.Tail(4000)
}

// startEdge writes edge's files into dir and starts edge and the agent, once the agent is
// connected.
func startEdge(ctx context.Context, sup *bench.Supervisor, dir, bin string, ws *sshd) (*edgeSide, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	hostKeyFile, hostKey, err := sshKeygen(ctx, dir, "host_ed25519")
	if err != nil {
		return nil, err
	}
	e := &edgeSide{hostKey: hostKey, token: randomHex(24)}
	sum := sha256.Sum256([]byte(e.token))
	var public, ops int
	for _, p := range []*int{&public, &ops, &e.sshPort} {
		if *p, err = bench.FreePort(); err != nil {
			return nil, err
		}
	}
	agentKey, apiKey := []byte(randomHex(32)), []byte(randomHex(32))
	files := map[string]string{
		"agent.key": string(agentKey), "api.key": string(apiKey),
		"session.key": randomHex(32), "oidc.secret": randomHex(32),
		// The SSH user is the workspace; the password a personal access token of one of its users.
		"workspaces.yaml": fmt.Sprintf("workspaces:\n  - name: bench\n    agent_id: a1\n    users: [bench]\n    ssh: {port: %d, user: %s, host_key: %q}\nusers:\n  - {name: bench, token_sha256: %s}\n",
			ws.port, ws.user, ws.hostKey, hex.EncodeToString(sum[:])),
		// OIDC is required by the workspaces section but unused by SSH: discovery happens on the
		// first browser login, which never comes.
		"edge.yaml": fmt.Sprintf(`listen: {public: "127.0.0.1:%d", ops: "127.0.0.1:%d", ssh: "127.0.0.1:%d"}
cells: [{id: 1, url: "http://127.0.0.1:9", legacy: true}]
agents: {keys: [{alg: HS256, file: agent.key}]}
gitlab_api: {secret_file: api.key}
workspaces:
  domain: ws.localhost
  insecure_http: true
  oidc: {issuer: "https://login.invalid", client_id: edge, client_secret_file: oidc.secret, redirect_url: "http://auth.ws.localhost/oauth/callback"}
  authorizer: {file: workspaces.yaml}
  session: {key_file: session.key}
  ssh: {host_key_file: %q, client_key_file: %q}
log: {level: warn, format: text}
`, public, ops, e.sshPort, hostKeyFile, ws.clientKeyFile),
	}
	now := time.Now()
	agentToken, err := tokens.MintAgentToken(tokens.MintAgentOptions{Key: agentKey, Algorithm: "HS256",
		Audience: tokens.DefaultAgentAudience, AgentID: "a1", IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour)})
	if err != nil {
		return nil, err
	}
	files["a1.tok"] = agentToken
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	if e.edge, err = sup.Start("edge", []string{bin, "serve", "--config", filepath.Join(dir, "edge.yaml")}, bench.StartOptions{}); err != nil {
		return nil, err
	}
	edgeURL := fmt.Sprintf("http://127.0.0.1:%d", public)
	if err := e.edge.WaitHTTP(ctx, 30*time.Second, fmt.Sprintf("http://127.0.0.1:%d/readyz", ops)); err != nil {
		return nil, fmt.Errorf("edge not ready: %w\n%s", err, e.edge.Tail(4000))
	}
	if e.agent, err = sup.Start("agent", []string{bin, "agent", "--edge", edgeURL, "--token-file", filepath.Join(dir, "a1.tok"),
		"--allow-port", strconv.Itoa(ws.port), "--log-level", "warn"}, bench.StartOptions{}); err != nil {
		return nil, err
	}
	apiToken, err := tokens.MintGitLabAPIToken(apiKey, "gitlab", "gitlab-kas", now, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	if err := e.agent.WaitReady(ctx, 30*time.Second, func() (bool, error) { return agentConnected(ctx, edgeURL, apiToken), nil }); err != nil {
		return nil, fmt.Errorf("the agent did not connect: %w\n%s", err, e.tails())
	}
	return e, nil
}

func agentConnected(ctx context.Context, edgeURL, apiToken string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, edgeURL+"/-/api/v1/agents/a1/connections", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body struct {
		Connections []json.RawMessage `json:"connections"`
	}
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&body) == nil && len(body.Connections) > 0
}
