package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// faultsEdge is the matrix's edge: one legacy cell (the fault cell), short timeouts so that a
// stall is cut within the case, and the loopback trusted so that a case's X-Request-Id names its
// access line.
func faultsEdge(t *testing.T, cell *faultCell, tls *tlsConfig) *edgeProc {
	cfg := edgeConfig{
		Cells:   []cellConfig{{ID: 1, URL: cell.url(), Legacy: true}},
		Routing: routingConfig{BodyTokenLimit: "32KiB", LongPollTimeout: "2s", UpstreamTimeout: "1s", TrustedProxies: []string{"127.0.0.1/32"}},
		TLS:     tls,
	}
	return startEdge(t, cfg)
}

var rawFaultPaths = []faultPath{
	{name: "get", method: http.MethodGet, target: "/api/v4/projects/1"},
	{name: "post", method: http.MethodPost, target: "/api/v4/projects/1/issues", body: `{"title":"a fault"}`, once: true},
	{name: "poll-parked", method: http.MethodPost, target: "/api/v4/jobs/request", body: `{"token":"glrt-faults-legacy-runner","last_update":"x"}`, hold: 300, once: true},
	{name: "poll-at-once", method: http.MethodPost, target: "/api/v4/jobs/request", body: `{"token":"glrt-faults-legacy-runner","last_update":"x"}`, once: true},
	{name: "chunked", method: http.MethodGet, target: "/api/v4/projects/2", answer: "chunked"},
}

// TestFaultMatrix drives every raw path of a cell's traffic through edge with every upstream
// fault and every client fault, each case on new connections, and asserts what a user would see:
// edge alive and serving, the client's outcome (a 502 or 504 with a cause when nothing was
// written, else a closed connection; never another request's bytes), the cell saw the request at
// most once (never, for a body the client did not finish), no goroutine or file descriptor left
// 2 s after, and an access line with the cause.
func TestFaultMatrix(t *testing.T) {
	cell := newFaultCell(t)
	e := faultsEdge(t, cell, nil)
	m := newMatrix(cell, e.PublicURL, rawFaultPaths[0], watchEdge(e))
	m.control(t, "warmup")
	m.cell.closeConns()
	start := m.procs.state(t)
	cases := 0
	for _, p := range rawFaultPaths {
		cases += m.runAll(t, p)
	}
	m.noDrift(t, start)
	t.Logf("fault matrix: %d cases over %d raw paths", cases, len(rawFaultPaths))
}

// matrix runs cases against one path of processes: the client connects to addr (the entry edge,
// procs[0]) and reaches the fault cell through every process of procs.
type matrix struct {
	cell  *faultCell
	addr  string
	procs procSet
	ctl   faultPath // the control request's path
	// stall is what a client waiting on a stalled upstream gets: 504 when a timeout applies (a
	// cell's upstream_timeout), 0 when none does (an agent's upstream may take as long as its
	// client waits): nothing until the client gives up after stallPatience.
	stall         int
	stallPatience time.Duration
	tag           string // before each case's id: unique across the matrices sharing a cell
	// slack is how many goroutines more than before a case a process may hold after it: its
	// idle keep-alive connections (2 for edge's to a cell; 3 at a hop's holder, where the control
	// request may find its stream to the agent not yet idle and open a second one). Files: 2. A
	// leak small enough to pass adds up over the cases: see noDrift.
	slack int
	n     int
}

func newMatrix(cell *faultCell, publicURL string, ctl faultPath, procs ...watched) *matrix {
	return &matrix{cell: cell, addr: strings.TrimPrefix(publicURL, "http://"), procs: procs, ctl: ctl,
		stall: http.StatusGatewayTimeout, stallPatience: 2500 * time.Millisecond, slack: 2}
}

// runAll runs path p with every upstream fault and every client fault that applies; it returns
// the number of cases.
func (m *matrix) runAll(t *testing.T, p faultPath) int {
	cases := 0
	for _, up := range upstreamFaults {
		cases++
		t.Run(p.name+"/"+up, func(t *testing.T) { m.run(t, p, up, cliNone) })
	}
	for _, cli := range clientFaults {
		if cli == cliResetSendingBody && p.method != http.MethodPost {
			continue
		}
		cases++
		t.Run(p.name+"/client-"+cli, func(t *testing.T) { m.run(t, p, upNone, cli) })
	}
	return cases
}

// control is a plain request on a new connection: edge still serves, and the answer is this
// request's own.
func (m *matrix) control(t *testing.T, id string) {
	t.Helper()
	conn, err := net.Dial("tcp", m.addr)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	defer conn.Close()
	io.WriteString(conn, m.ctl.bytes(faultRequest{id: id, fault: upNone}, len(m.ctl.body), m.ctl.body))
	r := readAnswer(conn, bufio.NewReader(conn), 5*time.Second)
	if r.status != http.StatusOK || r.body != caseBody(id) {
		t.Fatalf("control request %s: status %d body %q (%v), want its own answer", id, r.status, r.body, r.bodyErr)
	}
}

// run is one case, from no connection at the cell. After it: a control request (which may take
// a connection the case left idle), the cell's connections released (answered or closed, none
// in the middle of a request), and once the cell closes the idle ones, every process back to
// what it held before.
func (m *matrix) run(t *testing.T, p faultPath, up, cli string) {
	n, before, marks := m.begin(t)
	id := fmt.Sprintf("%sc%d.%s.%s.%s", m.tag, n, p.name, up, cli)
	conn, err := net.Dial("tcp", m.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	req := faultRequest{id: id, fault: up, answer: p.answer, hold: p.hold}
	wantCause := true
	maxSeen := 1
	switch cli {
	case cliNone:
		io.WriteString(conn, p.bytes(req, len(p.body), p.body))
		patience := 5 * time.Second
		if up == upStallMidBody || up == upStall && m.stall == 0 {
			patience = m.stallPatience
		}
		r := readAnswer(conn, br, patience)
		wantCause = judgeUpstream(t, id, up, r, m.stall)
	case cliResetSendingBody:
		io.WriteString(conn, p.bytes(req, 5000, p.body))
		time.Sleep(100 * time.Millisecond)
		reset(conn)
		maxSeen = 0
	case cliHalfCloseHeld:
		req.hold = holdOf(p, 1000)
		io.WriteString(conn, p.bytes(req, len(p.body), p.body))
		m.cell.waitRequest(t, id, "the cell has the request")
		conn.(*net.TCPConn).CloseWrite()
		if ok, got := endsWithoutAnswer(conn, 5*time.Second); !ok {
			t.Errorf("half-closed client got %q, want the connection ended with nothing (the cell never answered)", got)
		}
		m.cell.wantAbandoned(t, id, "the cell")
	case cliResetHeld:
		req.hold = holdOf(p, 1000)
		io.WriteString(conn, p.bytes(req, len(p.body), p.body))
		m.cell.waitRequest(t, id, "the cell has the request")
		time.Sleep(100 * time.Millisecond)
		reset(conn)
		m.cell.wantAbandoned(t, id, "the cell")
	case cliStopReading:
		req.answer = "big"
		io.WriteString(conn, p.bytes(req, len(p.body), p.body))
		m.cell.waitRequest(t, id, "the cell has the request")
		time.Sleep(time.Duration(p.hold)*time.Millisecond + 500*time.Millisecond)
		reset(conn)
	case cliPipelined:
		second := faultRequest{id: id + ".2", fault: upNone, answer: p.answer, hold: p.hold}
		req.hold = holdOf(p, 300)
		io.WriteString(conn, p.bytes(req, len(p.body), p.body)+p.bytes(second, len(p.body), p.body))
		for _, want := range []string{id, second.id} {
			r := readAnswer(conn, br, 5*time.Second)
			if r.status != http.StatusOK || r.body != caseBody(want) {
				t.Errorf("pipelined %s: status %d body %q (%v), want its own answer, in order", want, r.status, r.body, r.bodyErr)
				break
			}
		}
		wantCause = false
	}
	conn.Close()
	m.procs.alive(t)
	if n := m.cell.count(id); n > maxSeen {
		t.Errorf("the cell saw the request %d times, want at most %d", n, maxSeen)
	}
	m.control(t, id+".control")
	m.cell.released(t, "the cell's connections released (none in the middle of a request)")
	m.cell.closeConns()
	m.noLeak(t, before)
	m.logged(t, id, wantCause, marks)
}

// begin starts a case from no connection at the cell: its number, and what the processes hold
// and have written before it.
func (m *matrix) begin(t *testing.T) (n int, before []procState, marks []int) {
	t.Helper()
	m.n++
	m.cell.closeConns()
	return m.n, m.procs.state(t), m.procs.marks()
}

// logged checks the case's access lines (by its X-Request-Id): see procSet.logged.
func (m *matrix) logged(t *testing.T, id string, wantCause bool, marks []int) {
	t.Helper()
	m.procs.logged(t, marks, "request_id="+id+" ", wantCause)
}

// judgeUpstream checks the client's outcome of an upstream fault (stall: see matrix.stall); it
// says whether the access line must name a cause.
func judgeUpstream(t *testing.T, id, up string, r clientResult, stall int) bool {
	t.Helper()
	whole := r.status == http.StatusOK && r.bodyErr == nil && r.body == caseBody(id)
	edgeError := func(status int) bool {
		return r.status == status && strings.Contains(r.body, `"error":"`) && r.bodyErr == nil
	}
	if up != upInterimClose && r.interims > 0 {
		t.Errorf("got %+v: %d interim answers, want none (neither the client nor the upstream asked for one)", r, r.interims)
	}
	switch up {
	case upNone, upExtraBytes:
		if !whole {
			t.Errorf("got %+v, want the whole answer", r)
		}
		return false
	case upCloseStatus, upResetStatus, upCloseHeaders, upResetHeaders:
		if !edgeError(http.StatusBadGateway) {
			t.Errorf("got %+v, want 502 with a cause", r)
		}
	case upInterimClose:
		if !edgeError(http.StatusBadGateway) || r.interims > 1 {
			t.Errorf("got %+v, want at most one 103, then 502 with a cause", r)
		}
	case upStall:
		if stall == 0 && (r.status != 0 || r.closed) {
			t.Errorf("got %+v, want nothing, the connection open, until the client gave up", r)
		}
		if stall != 0 && !edgeError(stall) {
			t.Errorf("got %+v, want %d with a cause", r, stall)
		}
	case upCloseFirstByte, upCloseMidBody, upResetMidBody, upCloseLastChunk, upStallMidBody:
		// The answer had begun at the cell: a 502 when none of it had reached the client, else
		// the cell's head and a body that ends short with the connection; never a whole answer.
		cut := r.status == http.StatusOK && r.bodyErr != nil
		nothing := r.status == 0
		if whole || !(edgeError(http.StatusBadGateway) || cut || nothing) {
			t.Errorf("got %+v, want a 502 with a cause, a cut body or the connection ended", r)
		}
		if up != upStallMidBody && !r.closed && !edgeError(http.StatusBadGateway) {
			t.Errorf("got %+v, want the connection closed after a cut answer", r)
		}
	}
	return true
}

// noLeak waits up to 2 s for every process to hold no more goroutines and files than before the
// case (a few more: see slack).
func (m *matrix) noLeak(t *testing.T, before []procState) {
	t.Helper()
	m.procs.within(t, before, m.slack, "before the case")
}

// noDrift: after many cases, every process holds no more than it did before the first (the
// cell's connections closed), give or take the slack of one case. A leak small enough to pass
// each case's check adds up here.
func (m *matrix) noDrift(t *testing.T, start []procState) {
	t.Helper()
	m.cell.closeConns()
	t.Logf("after %d cases: %s", m.n, m.procs.within(t, start, m.slack, "before the first case"))
}
