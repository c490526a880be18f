// Command wsbench measures what a workspace's login costs on the request path: requests per
// second and p50 latency through an authenticated workspace route (session cookie, cached
// authorization) against the same upstream through the API for GitLab's agent proxy path (same
// edge, same agent, same tunnel, no login), side by side in interleaved wrk rounds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
	"gitlab.com/edge/edge/internal/devlogin"
	"gitlab.com/edge/edge/internal/oidctest"
	"gitlab.com/edge/edge/internal/testnet"
	"gitlab.com/edge/edge/tokens"
)

func main() {
	duration := flag.Duration("d", 10*time.Second, "duration of each wrk run")
	rounds := flag.Int("rounds", 3, "interleaved rounds of each case")
	conns := flag.Int("c", 64, "wrk connections")
	flag.Parse()
	if err := run(*duration, *rounds, *conns); err != nil {
		fmt.Fprintln(os.Stderr, "wsbench:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, rounds, conns int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "wsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "edge")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/edge").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	up, upPort, err := serveUpstream()
	if err != nil {
		return err
	}
	defer up.Close()
	public, ops := freePort(), freePort()
	redirect := fmt.Sprintf("http://auth.ws.localhost:%d/oauth/callback", public)
	opLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
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
		return err
	}
	files["a1.tok"] = agentToken
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	edge := exec.CommandContext(ctx, bin, "serve", "--config", filepath.Join(dir, "edge.yaml"))
	edge.Stderr = os.Stderr
	if err := edge.Start(); err != nil {
		return err
	}
	defer stop(edge)
	edgeURL := fmt.Sprintf("http://127.0.0.1:%d", public)
	agent := exec.CommandContext(ctx, bin, "agent", "--edge", edgeURL, "--token-file", filepath.Join(dir, "a1.tok"),
		"--allow-port", fmt.Sprint(upPort), "--log-level", "warn")
	agent.Stderr = os.Stderr
	if err := agent.Start(); err != nil {
		return err
	}
	defer stop(agent)

	apiToken, err := tokens.MintGitLabAPIToken(apiKey, "gitlab", "gitlab-kas", now, time.Hour)
	if err != nil {
		return err
	}
	apiPath := fmt.Sprintf("%s/-/api/v1/agents/a1/proxy/%d/", edgeURL, upPort)
	if err := waitFor(30*time.Second, func() bool { return status(apiPath, "Authorization", "Bearer "+apiToken) == 200 }); err != nil {
		return fmt.Errorf("the agent did not connect: %w", err)
	}
	wsHost := fmt.Sprintf("%d-bench.ws.localhost:%d", upPort, public)
	cookie, err := login(&oidctest.Provider{Provider: p}, "http://"+wsHost+"/")
	if err != nil {
		return err
	}
	if s := status(edgeURL+"/", "Host", wsHost, "Cookie", cookie); s != 200 {
		return fmt.Errorf("the workspace with the session answered %d", s)
	}

	cases := []struct {
		name   string
		url    string
		header []string
	}{
		{"API for GitLab agent proxy path (no login)", apiPath, []string{"Authorization: Bearer " + apiToken}},
		{"workspace route (session cookie, authorized)", edgeURL + "/", []string{"Host: " + wsHost, "Cookie: " + cookie}},
	}
	results := make([][]bench.WrkResult, len(cases))
	for r := range rounds {
		for i, c := range cases {
			args := []string{"-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%s", duration), "--latency"}
			for _, h := range c.header {
				args = append(args, "-H", h)
			}
			out, err := exec.Command("wrk", append(args, c.url)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("wrk: %v\n%s", err, out)
			}
			res, err := bench.ParseWrk(string(out))
			if err != nil {
				return fmt.Errorf("wrk output: %w\n%s", err, out)
			}
			if res.Non2xx3xx > 0 || res.SocketErrors > 0 {
				return fmt.Errorf("%s: %d non-2xx answers, %d socket errors", c.name, res.Non2xx3xx, res.SocketErrors)
			}
			fmt.Fprintf(os.Stderr, "round %d %s: %.0f req/s p50 %s\n", r+1, c.name, res.RequestsPerS, res.P50())
			results[i] = append(results[i], res)
		}
	}
	rate := func(i int) float64 {
		v := make([]float64, 0, rounds)
		for _, r := range results[i] {
			v = append(v, r.RequestsPerS)
		}
		return median(v)
	}
	p50 := func(i int) time.Duration {
		v := make([]float64, 0, rounds)
		for _, r := range results[i] {
			v = append(v, float64(r.P50()))
		}
		return time.Duration(median(v))
	}
	fmt.Printf("| case | req/s | p50 |\n|---|---|---|\n")
	for i, c := range cases {
		fmt.Printf("| %s | %.0f | %s |\n", c.name, rate(i), p50(i))
	}
	fmt.Printf("\nworkspace route vs agent proxy path: %.2fx requests/s (goal >= 0.9x), added p50 %s (%d connections, %d rounds of %s, medians)\n",
		rate(1)/rate(0), p50(1)-p50(0), conns, rounds, duration)
	return nil
}

// login runs the browser's login with a Go client and returns the workspace's session cookie.
func login(p *oidctest.Provider, start string) (string, error) {
	jar, _ := cookiejar.New(nil)
	c := testnet.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	next := start
	for range 10 {
		resp, err := c.Get(next)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode == http.StatusOK:
			u, _ := resp.Request.URL.Parse("/")
			for _, ck := range jar.Cookies(u) {
				if ck.Name == "edge_session" {
					return ck.Name + "=" + ck.Value, nil
				}
			}
			return "", errors.New("logged in without a session cookie")
		case resp.StatusCode != http.StatusFound:
			return "", fmt.Errorf("login: %d at %s", resp.StatusCode, next)
		case strings.HasPrefix(loc, p.Issuer):
			back, err := p.Login(context.Background(), c, loc, "bench", "bench")
			if err != nil {
				return "", err
			}
			next = back.String()
		default:
			u, _ := resp.Request.URL.Parse(loc)
			next = u.String()
		}
	}
	return "", errors.New("login did not end")
}

func serveUpstream() (*http.Server, int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	body := []byte(strings.Repeat("x", 1024))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })}
	go srv.Serve(ln)
	return srv, ln.Addr().(*net.TCPAddr).Port, nil
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func status(u string, header ...string) int {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return 0
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}
