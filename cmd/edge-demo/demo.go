package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/tunnel"
	"gitlab.com/edge/edge/wire"
)

// cmdDemo runs edge (the router binary, as `edge serve`) on embedded defaults with two demo cells
// on loopback and prints what to try.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("[--edge bin/edge] [--listen 127.0.0.1:8080] [--ops 127.0.0.1:9090] [--ssh 127.0.0.1:2222]", stderr)
	edgeBin := fs.String("edge", "", "the edge binary to run (default: edge next to this program; make demo builds bin/edge)")
	public := fs.String("listen", "127.0.0.1:8080", "edge's public address")
	ops := fs.String("ops", "127.0.0.1:9090", "edge's ops address (/metrics, /readyz)")
	sshAddr := fs.String("ssh", "127.0.0.1:2222", "edge's SSH address, when OpenSSH's sshd is installed for the demo workspace")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	edgePath, err := findEdge(*edgeBin)
	if err != nil {
		return err
	}
	addrs := []demoAddr{{"listen", *public}, {"ops", *ops}}
	_, sshdErr := os.Stat("/usr/sbin/sshd")
	if sshdErr == nil {
		addrs = append(addrs, demoAddr{"ssh", *sshAddr})
	}
	if err := probeDemoAddrs(addrs); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "edge-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	signer := &cellsim.JobTokenSigner{Key: key, Algorithm: "ES256", KID: "demo", Issuer: "https://gitlab.demo",
		Audience: "gitlab-authz-token", TTL: time.Hour}
	cell1, err := startDemoCell(ctx, 1, true, 1, signer, log)
	if err != nil {
		return err
	}
	cell2, err := startDemoCell(ctx, 2, false, 2000000, signer, log)
	if err != nil {
		return err
	}
	pubPath := filepath.Join(dir, "jwt.pub")
	if err := writePublicKey(pubPath, &key.PublicKey); err != nil {
		return err
	}
	_, publicPort, _ := net.SplitHostPort(*public)
	redirect := "http://auth." + demoDomain + ":" + publicPort + "/oauth/callback"
	login, err := startDemoLogin(ctx, redirect)
	if err != nil {
		return err
	}
	sshd, err := startDemoSSHD(ctx, dir)
	if err != nil {
		return err
	}
	cfgPath, agentKey, apiKey, err := writeDemoConfig(dir, demoConfig{public: *public, ops: *ops, ssh: *sshAddr,
		cells: [2]string{cell1.url, cell2.url}, issuer: login.Issuer, clientSecret: login.ClientSecret, redirect: redirect}, sshd)
	if err != nil {
		return err
	}
	tok2, jobID, err := seedDemoCell(cell2)
	if err != nil {
		return err
	}
	// The commands printed run edge as the demo was run: with go run (make demo), or the binary.
	self := edgePath
	if exe, _ := os.Executable(); strings.Contains(exe, "go-build") {
		self = "go run ./cmd/edge"
	}
	workspacePort, err := startDemoWorkspace(ctx, log)
	if err != nil {
		return err
	}
	ports := []int{workspacePort}
	sshStep := ""
	if sshd != nil {
		ports = append(ports, sshd.port)
		host, port, _ := net.SplitHostPort(*sshAddr)
		sshStep = fmt.Sprintf(`# 9. SSH into the workspace (its own sshd runs behind the agent); the password is the demo
#    user's personal access token, %s:
#    ssh -p %s demo@%s
#    scp -P %s FILE demo@%s:/tmp/   and   sftp -P %s demo@%s   work the same way.

`, sshd.token, port, host, port, host, port, host)
	}
	agent, err := newDemoAgent("http://"+*public, agentKey, ports, log)
	if err != nil {
		return err
	}
	apiToken, err := tokens.MintGitLabAPIToken(apiKey, "", "", time.Now(), 24*time.Hour)
	if err != nil {
		return err
	}
	edge := exec.CommandContext(ctx, edgePath, "serve", "--config", cfgPath)
	edge.Stdout, edge.Stderr = stderr, stderr
	// Ctrl-C or SIGTERM: edge drains (shutdown.grace, 2 s here) as it does in production.
	edge.Cancel = func() error { return edge.Process.Signal(syscall.SIGTERM) }
	edge.WaitDelay = 30 * time.Second
	if err := edge.Start(); err != nil {
		return fmt.Errorf("start %s serve: %w", edgePath, err)
	}
	go runDemoAgent(ctx, agent, "http://"+*ops, func() {
		printDemo(stdout, demoInfo{edge: "http://" + *public, ops: "http://" + *ops, cfg: cfgPath, self: self,
			tok2: tok2, jobID: jobID, apiToken: apiToken, workspacePort: workspacePort,
			workspaceURL: fmt.Sprintf("http://%d-demo.%s:%s/", workspacePort, demoDomain, publicPort), ssh: sshStep})
	})
	err = edge.Wait()
	if edge.ProcessState != nil && edge.ProcessState.Success() {
		return nil // stopped by Ctrl-C or SIGTERM, drained
	}
	return fmt.Errorf("edge serve: %w", err)
}

// demoConfig is what the demo's edge.yaml names: the addresses, the cells and the login.
type demoConfig struct {
	public, ops, ssh               string
	cells                          [2]string
	issuer, clientSecret, redirect string
}

// writeDemoConfig writes edge.yaml and the files it names into dir; it returns the config's path
// and the agent and API-for-GitLab secrets the demo mints with.
func writeDemoConfig(dir string, c demoConfig, sshd *demoSSH) (cfgPath string, agentKey, apiKey []byte, err error) {
	authzFile, sshListen, sshKeys := demoWorkspaces, "", ""
	if sshd != nil {
		entry, users := sshd.authorizerEntry()
		authzFile = "workspaces:\n  - name: demo\n    agent_id: demo-agent\n    users: [demo]\n" + entry + users
		sshListen = fmt.Sprintf(", ssh: %q", c.ssh)
		sshKeys = fmt.Sprintf("  ssh: {host_key_file: %q, client_key_file: %q}\n", sshd.edgeKeyFile, sshd.clientKeyFile)
	}
	cfgPath = filepath.Join(dir, "edge.yaml")
	yaml := fmt.Sprintf(`# edge demo config, written by the demo (make demo)
listen: {public: %[1]q, ops: %[2]q%[9]s}
cells:
  - {id: 1, url: %[3]q, legacy: true, id_ranges: ["1-1999999"]}
  - {id: 2, url: %[4]q, id_ranges: ["2000000-3999999"]}
tokens:
  job_jwt:
    keys: [{kid: demo, alg: ES256, file: jwt.pub}]
    issuer: "https://gitlab.demo"
agents:
  keys: [{alg: HS256, file: agent.key}]
  wait: %[5]s
gitlab_api: {secret_file: gitlab-api.key}
workspaces:
  domain: %[6]s
  insecure_http: true    # the demo is plain HTTP on loopback; never in production
  oidc: {issuer: %[7]q, client_id: edge, client_secret_file: oidc.secret, redirect_url: %[8]q}
  authorizer: {file: workspaces.yaml}
  session: {key_file: session.key, recheck: 10s}
%[10]sshutdown: {grace: 2s}
log: {level: warn, format: text}
`, c.public, c.ops, c.cells[0], c.cells[1], demoAgentWait, demoDomain, c.issuer, c.redirect, sshListen, sshKeys)
	agentKey, apiKey = demoSecret(), demoSecret()
	files := map[string][]byte{"agent.key": agentKey, "gitlab-api.key": apiKey, "session.key": demoSecret(),
		"oidc.secret": []byte(c.clientSecret), "workspaces.yaml": []byte(authzFile), "edge.yaml": []byte(yaml)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", nil, nil, err
		}
	}
	return cfgPath, agentKey, apiKey, nil
}

// seedDemoCell gives cell 2 a routable token it accepts and a job with artifacts to fetch.
func seedDemoCell(cell *demoCell) (token string, jobID uint64, err error) {
	token, err = mintDemoRoutable(tokens.Keys{}.Set(tokens.KeyCell, 2).Set(tokens.KeyOrganization, 1))
	if err != nil {
		return "", 0, err
	}
	if jobID, err = cell.AddJob(); err != nil {
		return "", 0, err
	}
	if err := cell.PutArtifact(jobID, []byte("demo artifacts")); err != nil {
		return "", 0, err
	}
	cell.AcceptToken(token)
	return token, jobID, nil
}

// findEdge returns the absolute path of the edge binary: the one given, or edge next to this
// program.
func findEdge(given string) (string, error) {
	if given == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		given = filepath.Join(filepath.Dir(exe), "edge")
	}
	path, err := filepath.Abs(given)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(path); err != nil || info.IsDir() {
		return "", usagef("no edge binary at %s: give --edge PATH (make demo builds bin/edge)", path)
	}
	return path, nil
}

// demoAgentWait is agents.wait in the demo: long enough to see edge wait for an agent that is
// not connected, short enough not to bore.
const demoAgentWait = 3 * time.Second

type demoCell struct {
	*cellsim.Cell
	url string
}

// startDemoCell serves a cellsim cell that names itself in an X-Demo-Cell header, so curl shows
// where each request landed.
func startDemoCell(ctx context.Context, id uint64, legacy bool, jobBase uint64, signer *cellsim.JobTokenSigner, log *slog.Logger) (*demoCell, error) {
	cell, err := cellsim.New(cellsim.Options{CellID: id, Legacy: legacy, JobIDBase: jobBase, LongPoll: 10 * time.Second,
		JobToken: signer, PublicArtifacts: true, Log: log})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	inner := cell.Handler()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Demo-Cell", fmt.Sprint(id))
		inner.ServeHTTP(w, r)
	})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo cell stopped", "cell", id, "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return &demoCell{Cell: cell, url: "http://" + ln.Addr().String()}, nil
}

func writePublicKey(path string, pub *ecdsa.PublicKey) error {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
}

func mintDemoRoutable(keys tokens.Keys) (string, error) {
	var random [16]byte
	if _, err := rand.Read(random[:]); err != nil {
		return "", err
	}
	return tokens.MintRoutable("glrt-t2_", random, keys)
}

type demoInfo struct {
	edge, ops, cfg, self, tok2, apiToken string
	jobID                                uint64
	workspacePort                        int
	workspaceURL                         string
	ssh                                  string // step 9, when the demo workspace has an sshd
}

func demoSecret() []byte {
	return []byte(rand.Text() + rand.Text())
}

// startDemoWorkspace serves the page the demo agent exposes.
func startDemoWorkspace(ctx context.Context, log *slog.Logger) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: demoWorkspaceApp()}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo workspace stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// newDemoAgent is an agent in this process; it dials the edge like any other agent.
func newDemoAgent(edgeURL string, key []byte, ports []int, log *slog.Logger) (*tunnel.Agent, error) {
	token, err := tokens.MintAgentToken(tokens.MintAgentOptions{Key: key, Algorithm: "HS256", Audience: tokens.DefaultAgentAudience,
		AgentID: "demo-agent", ProjectID: "1", IssuedAt: time.Now(), ExpiresAt: time.Now().Add(24 * time.Hour)})
	if err != nil {
		return nil, err
	}
	return tunnel.NewAgent(tunnel.AgentOptions{
		EdgeURL:    edgeURL,
		WriteError: hop.Write, RemoveEdgeHeaders: hop.StripEdgeHeaders,
		Token:         func(context.Context) (string, error) { return token, nil },
		Info:          tunnel.AgentInfo{Version: "demo", PodName: "demo-workspace"},
		Upstreams:     tunnel.AllowPorts(ports...),
		MinBackoff:    200 * time.Millisecond,
		WrapTransport: func(t *http.Transport) tunnel.RoundTripCloser { return wire.NewInlineTransport(t) },
		Logger:        log,
	})
}

// runDemoAgent starts the agent once the edge is ready, then prints what to try once the agent
// is connected: every printed command works from the moment it is printed.
func runDemoAgent(ctx context.Context, agent *tunnel.Agent, opsURL string, printTry func()) {
	if !pollDemo(ctx, func() bool {
		resp, err := http.Get(opsURL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		return
	}
	go agent.Run(ctx)
	if pollDemo(ctx, func() bool { return agent.Status().Connected > 0 }) {
		printTry()
	}
}

// pollDemo polls cond until it holds (true) or ctx ends (false).
func pollDemo(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

func printDemo(w io.Writer, d demoInfo) {
	fmt.Fprintf(w, `edge demo: edge on %[1]s, two demo cells behind it (cell 1 is the legacy cell).
Every answer carries X-Demo-Cell: the cell that served it. Try:

# 1. A routable runner token names cell 2 (RUNNER-TOKEN header, gitlab-runner >= 17.11):
curl -si %[1]s/api/v4/runners/verify -H 'RUNNER-TOKEN: %[4]s' -H 'Content-Type: application/json' -d '{"token":"%[4]s"}'

# 2. The same token only in the JSON body, as runners before 16.10 send it. Cell 2 has one job
#    queued and hands it out with a JWT job token (a runner asking again with the
#    X-GitLab-Last-Update it was given is held 10 s, then answered 204):
JOB_TOKEN=$(curl -s %[1]s/api/v4/jobs/request -H 'Content-Type: application/json' -d '{"token":"%[4]s","last_update":""}' | grep -o '"token":"glcbt-[^"]*"' | cut -d'"' -f4); echo "$JOB_TOKEN"

# 3. The verified job token names cell 2; the artifact download is answered 302, not followed:
curl -si %[1]s/api/v4/jobs/%[5]d/artifacts -H "JOB-TOKEN: $JOB_TOKEN"
#    With no token at all, job id %[5]d is inside cell 2's id range (2000000-3999999); the demo
#    cells serve artifacts as a public project's, to anyone, so cell 2 answers 302 again:
curl -si %[1]s/api/v4/jobs/%[5]d/artifacts

# 4. A token edge cannot read goes to the legacy cell:
curl -si %[1]s/api/v4/runners/router/discovery -H 'RUNNER-TOKEN: glrt-legacy-opaque-token-0000'

# 5. Two tokens naming different cells: 400, nothing is sent:
curl -si %[1]s/api/v4/jobs/1/artifacts -H 'JOB-TOKEN: %[4]s' -H "PRIVATE-TOKEN: $(%[3]s token mint routable --cell 1)"

# 6. The decision without sending anything, and a token's routing keys:
%[3]s explain --config %[2]s -X POST -H 'RUNNER-TOKEN: %[4]s' %[1]s/api/v4/jobs/request
%[3]s token decode %[4]s

# 7. An agent ("demo-agent") dialled out to edge and serves a demo workspace on port %[8]d. GitLab
#    asks any edge which instance holds it, and sends requests through its tunnel:
API='Authorization: Bearer %[7]s'
curl -s %[1]s/-/api/v1/agents/demo-agent/connections -H "$API"
curl -si %[1]s/-/api/v1/agents/demo-agent/proxy/%[8]d/hello -H "$API"
#    An agent that is not connected: edge waits agents.wait (%[9]v here), then 504 naming it:
curl -si %[1]s/-/api/v1/agents/nobody/proxy/%[8]d/ -H "$API"

# 8. A workspace behind a login. Open %[10]s in a browser (*.localhost names need no DNS), log
#    in as demo / demo at the development login, and type into the page: its WebSocket echoes
#    through the agent's tunnel. Without a session, edge sends a browser to log in first:
curl -si %[10]s

%[11]s# Metrics, readiness and the status page (cells and their health, agents, recent refusals:
#    open %[6]s/status in a browser):
curl -s %[6]s/status.json
curl -s %[6]s/metrics | grep ^edge_
curl -s %[6]s/readyz

Ctrl-C stops everything.
`, d.edge, d.cfg, d.self, d.tok2, d.jobID, d.ops, d.apiToken, d.workspacePort, demoAgentWait, d.workspaceURL, d.ssh)
}

// demoAddr is an address the demo serves on and the flag that sets it.
type demoAddr struct{ flag, addr string }

// probeDemoAddrs fails at once, naming the flags to change, when an address the demo would
// serve on cannot be listened on: serve opens its own listeners, only after the cells and the
// agent have started.
func probeDemoAddrs(addrs []demoAddr) error {
	var problems, busy, hint []string
	for i, a := range addrs {
		if _, port, _ := net.SplitHostPort(a.addr); port == "0" {
			problems = append(problems, fmt.Sprintf("--%s %s: the demo prints URLs with this port: give one, not 0", a.flag, a.addr))
			continue
		}
		if i > 0 && a.addr == addrs[0].addr {
			problems = append(problems, fmt.Sprintf("--%s and --%s are both %s: give two addresses", addrs[0].flag, a.flag, a.addr))
			continue
		}
		ln, err := net.Listen("tcp", a.addr)
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			busy = append(busy, fmt.Sprintf("%s is in use; choose another with --%s ADDR", a.addr, a.flag))
			hint = append(hint, fmt.Sprintf("--%s %s", a.flag, otherDemoAddr(a.addr)))
		case err != nil:
			problems = append(problems, fmt.Sprintf("--%s %s: %v", a.flag, a.addr, err))
		default:
			ln.Close()
		}
	}
	if len(busy) > 0 {
		problems = append(problems, fmt.Sprintf("%s (make demo DEMO_FLAGS='%s')", strings.Join(busy, "; "), strings.Join(hint, " ")))
	}
	if len(problems) > 0 {
		return usagef("demo: %s", strings.Join(problems, "; "))
	}
	return nil
}

// otherDemoAddr suggests the same host 10000 ports away (8080: 18080).
func otherDemoAddr(addr string) string {
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	if port += 10000; port > 65535 {
		port -= 20000
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
