package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
	"gitlab.com/edge/edge/internal/testkit/devlogin"
	"gitlab.com/edge/edge/internal/testkit/oidctest"
	"gitlab.com/edge/edge/tokens"
)

func run(ctx context.Context, o options, stdout io.Writer) (int, error) {
	dir, err := os.MkdirTemp("", "wsbench-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	sup := &bench.Supervisor{Dir: dir, Name: "wsbench"}
	defer sup.StopAll()
	bin, err := bench.GoBuild(ctx, dir, "./cmd/edge", "edge")
	if err != nil {
		return 1, err
	}
	up, upPort, err := serveUpstream()
	if err != nil {
		return 1, err
	}
	defer up.Close()
	var public, ops int
	for _, p := range []*int{&public, &ops} {
		if *p, err = bench.FreePort(); err != nil {
			return 1, err
		}
	}
	redirect := fmt.Sprintf("http://auth.ws.localhost:%d/oauth/callback", public)
	opLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1, err
	}
	p, opSrv := devlogin.Serve(opLn, devlogin.Options{RedirectURIs: []string{redirect},
		Users: []devlogin.User{{Username: "bench", Password: "bench"}}})
	defer opSrv.Close()

	agentKey, apiKey := []byte(strings.Repeat("a", 40)), []byte(strings.Repeat("g", 40))
	files := map[string]string{
		"agent.key": string(agentKey), "api.key": string(apiKey), "session.key": strings.Repeat("s", 40),
		"oidc.secret": p.ClientSecret, "workspaces.yaml": "workspaces:\n  - {name: bench, agent_id: a1, users: [bench]}\n",
		"edge.yaml": fmt.Sprintf(`listen: {public: "127.0.0.1:%d", ops: "127.0.0.1:%d"}
cells: [{id: 1, url: "http://127.0.0.1:%d", legacy: true}]
agents: {keys: [{alg: HS256, file: agent.key}]}
gitlab_api: {secret_file: api.key}
workspaces:
  domain: ws.localhost
  insecure_http: true
  oidc: {issuer: %q, client_id: %s, client_secret_file: oidc.secret, redirect_url: %q}
  authorizer: {file: workspaces.yaml}
  session: {key_file: session.key}
log: {level: warn, format: text}
`, public, ops, upPort, p.Issuer, p.ClientID, redirect),
	}
	now := time.Now()
	agentToken, err := tokens.MintAgentToken(tokens.MintAgentOptions{Key: agentKey, Algorithm: "HS256",
		Audience: tokens.DefaultAgentAudience, AgentID: "a1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		return 1, err
	}
	files["a1.tok"] = agentToken
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return 1, err
		}
	}
	if _, err := sup.Start("edge", []string{bin, "serve", "--config", filepath.Join(dir, "edge.yaml")}, bench.StartOptions{}); err != nil {
		return 1, err
	}
	edgeURL := fmt.Sprintf("http://127.0.0.1:%d", public)
	agent, err := sup.Start("agent", []string{bin, "agent", "--edge", edgeURL, "--token-file", filepath.Join(dir, "a1.tok"),
		"--allow-port", fmt.Sprint(upPort), "--log-level", "warn"}, bench.StartOptions{})
	if err != nil {
		return 1, err
	}

	apiToken, err := tokens.MintGitLabAPIToken(apiKey, "gitlab", "gitlab-kas", now, time.Hour)
	if err != nil {
		return 1, err
	}
	apiPath := fmt.Sprintf("%s/-/api/v1/agents/a1/proxy/%d/", edgeURL, upPort)
	if err := agent.WaitReady(ctx, 30*time.Second, func() (bool, error) {
		return status(ctx, apiPath, "Authorization", "Bearer "+apiToken) == 200, nil
	}); err != nil {
		return 1, fmt.Errorf("the agent did not connect: %w", err)
	}
	wsHost := fmt.Sprintf("%d-bench.ws.localhost:%d", upPort, public)
	cookie, err := login(ctx, &oidctest.Provider{Provider: p}, "http://"+wsHost+"/")
	if err != nil {
		return 1, err
	}
	if s := status(ctx, edgeURL+"/", "Host", wsHost, "Cookie", cookie); s != 200 {
		return 1, fmt.Errorf("the workspace with the session answered %d", s)
	}
	cases := []wrkCase{
		{"API for GitLab agent proxy path (no login)", apiPath, []string{"Authorization: Bearer " + apiToken}},
		{"workspace route (session cookie, authorized)", edgeURL + "/", []string{"Host: " + wsHost, "Cookie: " + cookie}},
	}
	results, err := measure(ctx, o, cases)
	if err != nil {
		return 1, err
	}
	report(stdout, o, cases, results)
	return 0, nil
}
