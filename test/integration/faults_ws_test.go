package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/oidctest"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// The workspace app's faults on a WebSocket upgrade, besides the upstream faults that end the
// answer before its head, a stall (until the client gives up) and none (101, then every byte
// echoed): what it does instead of (or after) its 101.
const (
	wsUpRefused  = "refused"             // 403 instead of 101
	wsUp101Close = "101-close"           // the 101, then FIN
	wsUp101Reset = "101-reset-mid-frame" // the 101 and part of a frame, then RST
	wsUp101Stall = "101-stall"           // the 101, then nothing, until the client gives up
	wsUp101Frame = "101-with-frame"      // the 101 and a frame of the stream in one write, then echo
	wsUpFlood    = "flood"               // the 101, then frames until a write fails
)

var wsUpstreamFaults = []string{upNone, upCloseStatus, upResetStatus, upCloseHeaders, upResetHeaders,
	upStall, upInterimClose, wsUpRefused, wsUp101Close, wsUp101Reset, wsUp101Stall, wsUp101Frame}

// The client's faults on a workspace WebSocket.
const (
	wsCliResetHandshake = "client-reset-handshake" // RST while the app holds the upgrade
	wsCliReset          = "client-reset"           // RST after the upgrade and one echo
	wsCliHalfClose      = "client-half-close"      // FIN after the upgrade and one echo
	wsCliStopReading    = "client-stop-reading"    // reads nothing while the app floods, then RST
)

var wsClientFaults = []string{wsCliResetHandshake, wsCliReset, wsCliHalfClose, wsCliStopReading}

// wsOpenGauge counts the entry's open workspace WebSockets.
const wsOpenGauge = "edge_workspace_websockets_open"

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

// wsFaultPath is one way to the app: the edge the client enters, and every process on the way
// (agentPath).
type wsFaultPath struct {
	name      string
	workspace string
	entry     *edgeProc
	port      string // the entry's public port, in the workspace host
	procs     procSet
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
	splice := c.startFaultAgent(t, "ws-splice", holder, m.up.port(), false, "info")
	perRequest := c.startFaultAgent(t, "ws-per-request", holder, m.up.port(), true, "info")
	c.waitHeld(t, splice.ID, holder, 15*time.Second)
	c.waitHeld(t, perRequest.ID, holder, 15*time.Second)
	env := &wsEnv{t: t, c: c, op: op, authz: authz, edges: c.edges, ports: ports, wsPort: m.up.port()}
	cookies := map[string]string{"wsa": sessionCookie(t, env, "wsa"), "wsb": sessionCookie(t, env, "wsb")}
	path := func(name, ws string, agent *agentProc, entry int) wsFaultPath {
		return wsFaultPath{name: name, workspace: ws, entry: c.edges[entry], port: ports[entry],
			procs: agentPath(c.edges[entry], holder, agent), cookie: cookies[ws]}
	}
	m.paths = []wsFaultPath{
		path("splice", "wsa", splice, 0),
		path("per-request", "wsb", perRequest, 0),
		path("hop-splice", "wsa", splice, 1),
		path("hop-per-request", "wsb", perRequest, 1),
	}
	return m
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
	before, marks := p.procs.state(t), p.procs.marks()
	wsOpen := edgeGauge(t, p.entry, wsOpenGauge)
	wantCause := false
	switch fault {
	case wsCliResetHandshake:
		conn, _ := m.dial(t, p, id, upNone, 1000)
		m.up.waitRequest(t, id, "the app has the upgrade")
		time.Sleep(100 * time.Millisecond)
		reset(conn)
		m.up.wantAbandoned(t, id, "the app")
		wantCause = true // client_closed
	case wsCliReset, wsCliHalfClose:
		conn, br := m.dial(t, p, id, upNone, 0)
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
	p.procs.alive(t)
	if n := m.up.count(id); n > 1 {
		t.Errorf("the app saw the upgrade %d times, want at most once", n)
	}
	m.control(t, p, id+".control")
	m.up.released(t, "the app's connections ended (no WebSocket or request left open)")
	m.up.closeConns()
	p.procs.settled(t, before)
	gaugeBack(t, p.entry, wsOpenGauge, wsOpen)
	p.procs.logged(t, marks, "path=/ws/"+id+" ", wantCause)
}

// upstreamFault runs a case of an app's fault and judges what the client saw; it says whether
// a line must name a cause.
func (m *wsMatrix) upstreamFault(t *testing.T, p wsFaultPath, id, fault string) bool {
	conn, br := m.dial(t, p, id, fault, 0)
	defer conn.Close()
	patience := 5 * time.Second
	if fault == upStall {
		patience = wsPatience
	}
	a := readAnswer(conn, br, patience)
	edgeError := a.status == http.StatusBadGateway && a.bodyErr == nil && strings.Contains(a.body, `"error":"`) &&
		a.header.Get("Content-Type") == "application/json"
	switch fault {
	case upCloseStatus, upResetStatus, upCloseHeaders, upResetHeaders:
		if !edgeError {
			t.Errorf("got %s, want 502 with a cause in edge's format", a)
		}
		return true
	case upInterimClose:
		if !edgeError || a.interims > 1 {
			t.Errorf("got %s, want at most one 103, then 502 with a cause in edge's format", a)
		}
		return true
	case wsUpRefused:
		if a.status != http.StatusForbidden || a.body != "refused "+id {
			t.Errorf("got %s, want the app's own 403", a)
		}
	case upStall:
		if a.status != 0 || a.closed {
			t.Errorf("got %s, want nothing, the connection open, until the client gave up", a)
		}
		conn.Close()
		m.wantAppEnded(t, id)
		return true // client_closed
	case upNone:
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
	conn, br := m.dial(t, p, id, upNone, 0)
	defer conn.Close()
	a := readAnswer(conn, br, 5*time.Second)
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
	m.wantUpgraded(t, readAnswer(conn, br, 5*time.Second))
}

func (m *wsMatrix) wantUpgraded(t *testing.T, a clientResult) {
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
