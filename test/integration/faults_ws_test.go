package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/oidctest"
	"gitlab.com/edge/edge/internal/poll"
)

// The workspace app's faults on a WebSocket upgrade: what it does instead of (or after) its 101.
const (
	wsUpNone         = "none"                // 101, then every byte echoed
	wsUpCloseStatus  = "close-status"        // part of the status line, then FIN
	wsUpResetStatus  = "reset-status"        // part of the status line, then RST
	wsUpCloseHeaders = "close-headers"       // the status line and part of the headers, then FIN
	wsUpResetHeaders = "reset-headers"       // the same, then RST
	wsUpStall        = "stall"               // nothing at all, until the client gives up
	wsUpInterimClose = "interim-close"       // a 103, then FIN
	wsUpRefused      = "refused"             // 403 instead of 101
	wsUp101Close     = "101-close"           // the 101, then FIN
	wsUp101Reset     = "101-reset-mid-frame" // the 101 and part of a frame, then RST
	wsUp101Stall     = "101-stall"           // the 101, then nothing, until the client gives up
	wsUp101Frame     = "101-with-frame"      // the 101 and a frame of the stream in one write, then echo
	wsUpFlood        = "flood"               // the 101, then frames until a write fails
)

var wsUpstreamFaults = []string{wsUpNone, wsUpCloseStatus, wsUpResetStatus, wsUpCloseHeaders, wsUpResetHeaders,
	wsUpStall, wsUpInterimClose, wsUpRefused, wsUp101Close, wsUp101Reset, wsUp101Stall, wsUp101Frame}

// The client's faults on a workspace WebSocket.
const (
	wsCliResetHandshake = "client-reset-handshake" // RST while the app holds the upgrade
	wsCliReset          = "client-reset"           // RST after the upgrade and one echo
	wsCliHalfClose      = "client-half-close"      // FIN after the upgrade and one echo
	wsCliStopReading    = "client-stop-reading"    // reads nothing while the app floods, then RST
)

var wsClientFaults = []string{wsCliResetHandshake, wsCliReset, wsCliHalfClose, wsCliStopReading}

// wsPatience is how long a client waits on a stalled app before it gives up.
const wsPatience = time.Second

// TestFaultMatrixWorkspaceWebSocket drives workspace WebSockets through edge and an agent to an
// app that answers the upgrade by hand, with every upstream fault and every client fault, over
// both ways an agent serves a port, from the edge that holds the agent and from another edge
// (the hop: a request to the holder's internal listener): splice streams (edge reads the app's
// 101 itself) and the per-request tunnel (the agent's proxy reads it, and edge the agent's).
// Each case asserts: before any 101 reached the client, a 502 in edge's error format (an app's
// own refusal passes as it is); after it, the relay ends at both ends (the app sees its
// connection end once the client has gone, the client once the app has); every process alive,
// and a new WebSocket works; the app saw the upgrade at most once; the edges and the agent back
// to their goroutines and files, and the entry to its open WebSockets, within 2 s; and the
// entry's access line for the case (written when the WebSocket ended), with a line naming the
// cause when it failed before a 101 (the client going away included: client_closed).
func TestFaultMatrixWorkspaceWebSocket(t *testing.T) {
	start := time.Now()
	m := newWSMatrix(t)
	t.Logf("setup: %v", time.Since(start).Round(time.Millisecond))
	total := 0
	for _, p := range m.paths {
		t.Run(p.name, func(t *testing.T) {
			began := time.Now()
			m.control(t, p, p.name+".warmup")
			cases := 0
			for _, f := range wsUpstreamFaults {
				cases++
				t.Run(f, func(t *testing.T) { m.run(t, p, f) })
			}
			for _, f := range wsClientFaults {
				cases++
				t.Run(f, func(t *testing.T) { m.run(t, p, f) })
			}
			total += cases
			t.Logf("%s: %d cases in %v", p.name, cases, time.Since(began).Round(time.Millisecond))
		})
	}
	t.Logf("workspace WebSocket fault matrix: %d cases over %d paths in %v", total, len(m.paths), time.Since(start).Round(time.Millisecond))
}

// wsMatrix is two edges serving workspaces (sharing Redis), the app (wsUpstream) on one port,
// and two agents held by the first edge for that port: one splices, one serves each request
// itself; each serves a workspace of alice's, for which she holds a session cookie.
type wsMatrix struct {
	up    *wsUpstream
	paths []wsFaultPath
	n     int
}

// wsFaultPath is one way to the app: the edge the client enters, the agent, and every process
// on the way (the entry, the holder when it is another edge, the agent: in that order).
type wsFaultPath struct {
	name      string
	workspace string
	entry     *edgeProc
	port      string // the entry's public port, in the workspace host
	agent     *agentProc
	procs     []leakProc
	cookie    string // the Cookie header of alice's session on the workspace host
}

func newWSMatrix(t *testing.T) *wsMatrix {
	t.Helper()
	m := &wsMatrix{up: newWSUpstream(t)}
	ports := []string{portOf(freeAddr(t)), portOf(freeAddr(t))}
	var redirects []string
	for _, p := range ports {
		redirects = append(redirects, "http://auth."+wsDomain+":"+p+"/oauth/callback")
	}
	op := oidctest.Start(t, oidctest.Options{RedirectURIs: redirects,
		Users: []oidctest.User{{Username: "alice", Password: "pw-alice"}}})
	c := newTunnelCluster(t, 0)
	authz := filepath.Join(c.dir, "workspaces.yaml")
	writeFile(t, authz, []byte("workspaces:\n  - {name: wsa, agent_id: ws-splice, users: [alice]}\n"+
		"  - {name: wsb, agent_id: ws-per-request, users: [alice]}\n"))
	secret := filepath.Join(c.dir, "oidc.secret")
	writeFile(t, secret, []byte(op.ClientSecret))
	sessionKey := filepath.Join(c.dir, "session.key")
	writeFile(t, sessionKey, []byte(strings.Repeat("s", 40)))
	for i, p := range ports {
		cfg := c.newEdgeConfig()
		cfg.Listen.Public = "127.0.0.1:" + p
		cfg.Log = logConfig{Level: "info", Format: "text"}
		cfg.Workspaces = &workspacesConfig{
			Domain: wsDomain, InsecureHTTP: true,
			OIDC: oidcConfig{Issuer: op.Issuer, ClientID: op.ClientID, ClientSecretFile: secret,
				RedirectURL: redirects[i], Scopes: []string{"openid", "profile"}},
			Authorizer: authorizerConfig{File: authz},
			// No recheck within the test: a case's WebSocket ends by its fault alone.
			Session: sessionConfig{KeyFile: sessionKey, Recheck: "10m"},
		}
		c.edges = append(c.edges, startEdge(t, cfg))
	}
	holder := c.edges[0]
	splice := startWSAgent(t, c, "ws-splice", holder, m.up.port(), false)
	perRequest := startWSAgent(t, c, "ws-per-request", holder, m.up.port(), true)
	c.waitHeld(t, splice.ID, holder, 15*time.Second)
	c.waitHeld(t, perRequest.ID, holder, 15*time.Second)
	env := &wsEnv{t: t, c: c, op: op, authz: authz, edges: c.edges, ports: ports, wsPort: m.up.port()}
	cookies := map[string]string{"wsa": sessionCookie(t, env, "wsa"), "wsb": sessionCookie(t, env, "wsb")}
	path := func(name, ws string, agent *agentProc, entry int) wsFaultPath {
		p := wsFaultPath{name: name, workspace: ws, entry: c.edges[entry], port: ports[entry], agent: agent, cookie: cookies[ws]}
		p.procs = []leakProc{edgeLeakProc(p.entry)}
		if p.entry != holder {
			p.procs = append(p.procs, edgeLeakProc(holder))
		}
		p.procs = append(p.procs, agentLeakProc(agent))
		return p
	}
	m.paths = []wsFaultPath{
		path("splice", "wsa", splice, 0),
		path("per-request", "wsb", perRequest, 0),
		path("hop-splice", "wsa", splice, 1),
		path("hop-per-request", "wsb", perRequest, 1),
	}
	return m
}

// startWSAgent runs an agent for port, held by e; perRequest gives it a tracing block, which
// keeps it on the per-request path (nothing is sampled).
func startWSAgent(t *testing.T, c *tunnelCluster, id string, e *edgeProc, port int, perRequest bool) *agentProc {
	t.Helper()
	ops, token := freeAddr(t), c.agentTokenFile(id)
	args := []string{"agent", "--edge", e.PublicURL, "--token-file", token, "--ops", ops,
		"--log-level", "info", "--allow-port", strconv.Itoa(port)}
	if perRequest {
		conf := filepath.Join(c.dir, id+".yaml")
		writeFile(t, conf, []byte(fmt.Sprintf("edge: %s\ntoken_file: %s\nallow_ports: [%d]\ntracing: {otlp_endpoint: \"http://127.0.0.1:9\", sample_ratio: 0}\n",
			e.PublicURL, token, port)))
		args = append(args, "--config", conf)
	}
	a := &agentProc{ID: id, OpsURL: "http://" + ops, client: &http.Client{Timeout: time.Second}}
	a.process = startProcess(t, "agent "+id, exec.Command(edgeBinaryPath(), args...))
	c.mu.Lock()
	c.agents = append(c.agents, a)
	c.mu.Unlock()
	return a
}

// sessionCookie logs alice in at workspace ws and returns her session cookie as a Cookie header.
func sessionCookie(t *testing.T, env *wsEnv, ws string) string {
	t.Helper()
	c := env.loginGo(0, ws, "alice")
	u, err := url.Parse(env.wsURL(0, ws, "/"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "edge_session" {
			return ck.Name + "=" + ck.Value
		}
	}
	t.Fatalf("no session cookie for %s after the login", u)
	return ""
}

// run is one case: fault is an upstream fault (wsUpstreamFaults) or a client fault
// (wsClientFaults, the app answering as it should).
func (m *wsMatrix) run(t *testing.T, p wsFaultPath, fault string) {
	m.n++
	id := fmt.Sprintf("w%d.%s.%s", m.n, p.name, fault)
	m.up.closeConns()
	before := takeUsage(t, p.procs)
	wsOpen := m.websocketsOpen(t, p)
	marks := outputMarks(p.procs)
	wantCause := false
	switch fault {
	case wsCliResetHandshake:
		conn, _ := m.dial(t, p, id, wsUpNone, 1000)
		poll.Until(t, 5*time.Second, "the app has the upgrade", func() bool { return m.up.count(id) == 1 })
		time.Sleep(100 * time.Millisecond)
		reset(conn)
		if !poll.Wait(t, 2*time.Second, "the app's connection closed while it held the upgrade", func() bool { return m.up.abandoned(id) }) {
			t.Errorf("the client went away during the handshake and the app's connection stayed open")
		}
		wantCause = true // client_closed
	case wsCliReset, wsCliHalfClose:
		conn, br := m.dial(t, p, id, wsUpNone, 0)
		m.upgraded(t, conn, br)
		m.echo(t, conn, br, id)
		if fault == wsCliReset {
			reset(conn)
		} else {
			conn.(*net.TCPConn).CloseWrite()
			if got, ended := readToEnd(conn, br, 2*time.Second); !ended || len(got) > 0 {
				t.Errorf("half-closed client: got %q, ended %v; want the stream to end with nothing more", got, ended)
			}
		}
		m.wantAppEnded(t, id)
		conn.Close()
	case wsCliStopReading:
		conn, br := m.dial(t, p, id, wsUpFlood, 0)
		m.upgraded(t, conn, br)
		poll.UntilState(t, 10*time.Second, "the app's writes to stall (the client reads nothing)", func() (bool, string) {
			n := m.up.flooded(id)
			time.Sleep(200 * time.Millisecond)
			return n > 0 && m.up.flooded(id) == n, fmt.Sprintf("%d bytes written", n)
		})
		t.Logf("the app wrote %d bytes before its writes stalled", m.up.flooded(id))
		reset(conn)
		m.wantAppEnded(t, id)
	default:
		wantCause = m.upstreamFault(t, p, id, fault)
	}
	m.alive(t, p)
	if n := m.up.count(id); n > 1 {
		t.Errorf("the app saw the upgrade %d times, want at most once", n)
	}
	m.control(t, p, id+".control")
	poll.UntilState(t, 2*time.Second, "the app's connections ended (no WebSocket or request left open)", func() (bool, string) {
		n := m.up.busy()
		return n == 0, fmt.Sprintf("%d open", n)
	})
	m.up.closeConns()
	settle(t, p.procs, before)
	poll.UntilState(t, 2*time.Second, "edge_workspace_websockets_open back to its value before the case", func() (bool, string) {
		n := m.websocketsOpen(t, p)
		return n == wsOpen, fmt.Sprintf("%v open, %v before", n, wsOpen)
	})
	m.logged(t, p, id, wantCause, marks)
}

// upstreamFault runs a case of an app's fault and judges what the client saw; it says whether
// a line must name a cause.
func (m *wsMatrix) upstreamFault(t *testing.T, p wsFaultPath, id, fault string) bool {
	conn, br := m.dial(t, p, id, fault, 0)
	defer conn.Close()
	patience := 5 * time.Second
	if fault == wsUpStall {
		patience = wsPatience
	}
	a := readUpgrade(conn, br, patience)
	edgeError := a.status == http.StatusBadGateway && a.bodyErr == nil && strings.Contains(a.body, `"error":"`) &&
		a.header.Get("Content-Type") == "application/json"
	switch fault {
	case wsUpCloseStatus, wsUpResetStatus, wsUpCloseHeaders, wsUpResetHeaders:
		if !edgeError {
			t.Errorf("got %s, want 502 with a cause in edge's format", a)
		}
		return true
	case wsUpInterimClose:
		if !edgeError || a.interims > 1 {
			t.Errorf("got %s, want at most one 103, then 502 with a cause in edge's format", a)
		}
		return true
	case wsUpRefused:
		if a.status != http.StatusForbidden || a.body != "refused "+id {
			t.Errorf("got %s, want the app's own 403", a)
		}
	case wsUpStall:
		if a.status != 0 || a.closed {
			t.Errorf("got %s, want nothing, the connection open, until the client gave up", a)
		}
		conn.Close()
		m.wantAppEnded(t, id)
		return true // client_closed
	case wsUpNone:
		m.wantUpgraded(t, a)
		m.echo(t, conn, br, id)
	case wsUp101Frame:
		m.wantUpgraded(t, a)
		want := wsFrame([]byte("hello "+id), false)
		got := make([]byte, len(want))
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, want) {
			t.Errorf("the bytes after the 101: %q (%v), want the app's frame %q", got, err, want)
		}
		m.echo(t, conn, br, id)
	case wsUp101Close, wsUp101Reset:
		m.wantUpgraded(t, a)
		got, ended := readToEnd(conn, br, 2*time.Second)
		if want := wsPartialFrame(id); !ended || !bytes.HasPrefix(want, got) || fault == wsUp101Close && len(got) > 0 {
			t.Errorf("after the 101: %q, ended %v; want the stream to end within 2 s with at most the app's part of a frame", got, ended)
		}
	case wsUp101Stall:
		m.wantUpgraded(t, a)
		conn.Write(wsFrame([]byte("frame "+id), true))
		if got, ended := readToEnd(conn, br, wsPatience); ended || len(got) > 0 {
			t.Errorf("after the 101 from an app that stalls: %q, ended %v; want nothing and the stream open", got, ended)
		}
		conn.Close()
		m.wantAppEnded(t, id)
	}
	return false
}

// control is a whole WebSocket exchange on a new connection: edge still serves, and the echo is
// this WebSocket's own.
func (m *wsMatrix) control(t *testing.T, p wsFaultPath, id string) {
	t.Helper()
	conn, br := m.dial(t, p, id, wsUpNone, 0)
	defer conn.Close()
	a := readUpgrade(conn, br, 5*time.Second)
	if a.status != http.StatusSwitchingProtocols {
		t.Fatalf("control WebSocket %s: got %s, want 101", id, a)
	}
	m.echo(t, conn, br, id)
}

func (m *wsMatrix) dial(t *testing.T, p wsFaultPath, id, fault string, holdMS int) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.entry.PublicURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	host := fmt.Sprintf("%d-%s.%s:%s", m.up.port(), p.workspace, wsDomain, p.port)
	fmt.Fprintf(conn, "GET /ws/%s HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nOrigin: http://%s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nX-Case: %s\r\nX-Fault: %s\r\nX-Hold: %d\r\n\r\n",
		id, host, p.cookie, host, wsKey, id, fault, holdMS)
	return conn, bufio.NewReader(conn)
}

// upgraded reads the answer to a client's upgrade, which must be the app's 101.
func (m *wsMatrix) upgraded(t *testing.T, conn net.Conn, br *bufio.Reader) {
	t.Helper()
	m.wantUpgraded(t, readUpgrade(conn, br, 5*time.Second))
}

func (m *wsMatrix) wantUpgraded(t *testing.T, a wsAnswer) {
	t.Helper()
	if a.status != http.StatusSwitchingProtocols || a.header.Get("Sec-WebSocket-Accept") != wsAccept(wsKey) {
		t.Fatalf("got %s, want the app's 101", a)
	}
}

// echo sends a frame and wants exactly it back (the app echoes bytes): never another stream's.
func (m *wsMatrix) echo(t *testing.T, conn net.Conn, br *bufio.Reader, id string) {
	t.Helper()
	frame := wsFrame([]byte("frame "+id), true)
	if _, err := conn.Write(frame); err != nil {
		t.Fatalf("writing a frame: %v", err)
	}
	got := make([]byte, len(frame))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, frame) {
		t.Fatalf("echo: %q (%v), want %q", got, err, frame)
	}
}

// wantAppEnded: the relay ended the app's end of the case's connection within 2 s.
func (m *wsMatrix) wantAppEnded(t *testing.T, id string) {
	t.Helper()
	if !poll.Wait(t, 2*time.Second, "the app's connection of the case to end", func() bool { return m.up.ended(id) }) {
		t.Errorf("the client's end of the WebSocket is gone and the app's is still open")
	}
}

func (m *wsMatrix) alive(t *testing.T, path wsFaultPath) {
	t.Helper()
	for _, p := range path.procs {
		select {
		case <-p.proc.exited:
			t.Fatalf("%s exited: %v\n%s", p.proc.name, p.proc.waitErr, p.proc.out.String())
		default:
		}
	}
}

// websocketsOpen is the entry's count of open workspace WebSockets.
func (m *wsMatrix) websocketsOpen(t *testing.T, p wsFaultPath) float64 {
	t.Helper()
	n, err := metricSum(p.entry.OpsURL+"/metrics", "edge_workspace_websockets_open", "")
	if err != nil {
		t.Fatalf("edge's metrics: %v", err)
	}
	return n
}

// logged checks the entry's access line for the case (written when the WebSocket ended) and,
// when it failed before a 101, a line with the cause: an edge's access line for the case with
// one (the entry's, or the holder's for the hop), or the per-request agent's line for the failed
// upstream request it answered itself (edge passed its 502 on).
func (m *wsMatrix) logged(t *testing.T, p wsFaultPath, id string, wantCause bool, marks []int) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, "the case's access line, and a line with its cause", func() (bool, string) {
		entry, cause := "", !wantCause
		for i, proc := range p.procs {
			out := proc.proc.out.String()
			if i == len(p.procs)-1 { // the agent
				cause = cause || strings.Contains(out[min(marks[i], len(out)):], "upstream request failed")
				continue
			}
			for _, l := range strings.Split(out, "\n") {
				if !strings.Contains(l, "msg=access") || !strings.Contains(l, "path=/ws/"+id+" ") {
					continue
				}
				if i == 0 {
					entry = l
				}
				cause = cause || strings.Contains(l, " cause=")
			}
		}
		return entry != "" && cause, fmt.Sprintf("entry's access line %q, cause found %v", entry, cause)
	})
}

// wsAnswer is what a client read of the answer to its upgrade.
type wsAnswer struct {
	status   int // 0: none
	interims int // 1xx answers before it, 101 aside
	header   http.Header
	body     string // a refusal's body
	bodyErr  error
	closed   bool // the connection ended instead of an answer
}

func (a wsAnswer) String() string {
	return fmt.Sprintf("status %d after %d interim answers, body %q (%v), closed %v", a.status, a.interims, a.body, a.bodyErr, a.closed)
}

// readUpgrade reads the answer to an upgrade within patience: a 101's stream bytes stay in br.
func readUpgrade(conn net.Conn, br *bufio.Reader, patience time.Duration) wsAnswer {
	conn.SetReadDeadline(time.Now().Add(patience))
	defer conn.SetReadDeadline(time.Time{})
	var a wsAnswer
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			a.closed = !isTimeoutErr(err)
			return a
		}
		if resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			a.interims++
			continue
		}
		a.status, a.header = resp.StatusCode, resp.Header
		if resp.StatusCode != http.StatusSwitchingProtocols {
			b, err := io.ReadAll(resp.Body)
			a.body, a.bodyErr = string(b), err
		}
		return a
	}
}

// readToEnd reads what comes within patience: ended when the stream ended (FIN or RST) rather
// than patience passing.
func readToEnd(conn net.Conn, br *bufio.Reader, patience time.Duration) ([]byte, bool) {
	conn.SetReadDeadline(time.Now().Add(patience))
	defer conn.SetReadDeadline(time.Time{})
	got, err := io.ReadAll(br)
	return got, err == nil || !isTimeoutErr(err)
}
