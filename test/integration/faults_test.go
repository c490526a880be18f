package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/poll"
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
	m := &matrix{e: e, cell: cell, addr: strings.TrimPrefix(e.PublicURL, "http://")}
	m.control(t, "warmup")
	cases := 0
	for _, p := range rawFaultPaths {
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
	}
	t.Logf("fault matrix: %d cases over %d raw paths", cases, len(rawFaultPaths))
}

type matrix struct {
	e    *edgeProc
	cell *faultCell
	addr string
	n    int
}

// state is what edge holds: its goroutines (go_goroutines) and open files.
func (m *matrix) state(t *testing.T) (goroutines, fds int) {
	t.Helper()
	resp, err := http.Get(m.e.OpsURL + "/metrics")
	if err != nil {
		t.Fatalf("edge's metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			fmt.Sscan(v, &goroutines)
		}
	}
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", m.e.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("edge's files: %v", err)
	}
	return goroutines, len(entries)
}

func (m *matrix) alive(t *testing.T) {
	t.Helper()
	select {
	case <-m.e.exited:
		t.Fatalf("edge exited: %v\n%s", m.e.waitErr, m.e.out.String())
	default:
	}
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
	p := rawFaultPaths[0]
	io.WriteString(conn, p.bytes(faultRequest{id: id, fault: upNone}, 0, ""))
	r := readAnswer(conn, bufio.NewReader(conn), 5*time.Second)
	if r.status != http.StatusOK || r.body != caseBody(id) {
		t.Fatalf("control request %s: status %d body %q (%v), want its own answer", id, r.status, r.body, r.bodyErr)
	}
}

func (m *matrix) run(t *testing.T, p faultPath, up, cli string) {
	m.n++
	id := fmt.Sprintf("c%d.%s.%s.%s", m.n, p.name, up, cli)
	m.cell.closeConns()
	g0, f0 := m.state(t)
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
		if up == upStallMidBody {
			patience = 2500 * time.Millisecond
		}
		r := readAnswer(conn, br, patience)
		wantCause = judgeUpstream(t, id, up, r)
	case cliResetSendingBody:
		io.WriteString(conn, p.bytes(req, 5000, p.body))
		time.Sleep(100 * time.Millisecond)
		reset(conn)
		maxSeen = 0
	case cliHalfCloseHeld:
		req.hold = holdOf(p, 1000)
		io.WriteString(conn, p.bytes(req, len(p.body), p.body))
		poll.Until(t, 5*time.Second, "the cell has the request", func() bool { return m.cell.count(id) == 1 })
		conn.(*net.TCPConn).CloseWrite()
		if ok, got := endsWithoutAnswer(conn, 5*time.Second); !ok {
			t.Errorf("half-closed client got %q, want the connection ended with nothing (the cell never answered)", got)
		}
	case cliResetHeld:
		req.hold = holdOf(p, 1000)
		io.WriteString(conn, p.bytes(req, len(p.body), p.body))
		poll.Until(t, 5*time.Second, "the cell has the request", func() bool { return m.cell.count(id) == 1 })
		time.Sleep(100 * time.Millisecond)
		reset(conn)
	case cliStopReading:
		req.answer = "big"
		io.WriteString(conn, p.bytes(req, len(p.body), p.body))
		poll.Until(t, 5*time.Second, "the cell has the request", func() bool { return m.cell.count(id) == 1 })
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
	m.alive(t)
	if n := m.cell.count(id); n > maxSeen {
		t.Errorf("the cell saw the request %d times, want at most %d", n, maxSeen)
	}
	m.noLeak(t, g0, f0)
	m.logged(t, id, wantCause)
	m.control(t, id+".control")
}

// judgeUpstream checks the client's outcome of an upstream fault; it says whether the access
// line must name a cause.
func judgeUpstream(t *testing.T, id, up string, r clientResult) bool {
	t.Helper()
	whole := r.status == http.StatusOK && r.bodyErr == nil && r.body == caseBody(id)
	edgeError := func(status int) bool {
		return r.status == status && strings.Contains(r.body, `"error":"`) && r.bodyErr == nil
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
		if !edgeError(http.StatusGatewayTimeout) {
			t.Errorf("got %+v, want 504 with a cause", r)
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

// noLeak waits up to 2 s for edge to hold no more goroutines and files than before the case
// (a few more: an idle connection to the cell kept for the next request).
func (m *matrix) noLeak(t *testing.T, g0, f0 int) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, "edge back to the goroutines and files it had before the case", func() (bool, string) {
		g, f := m.state(t)
		return g <= g0+2 && f <= f0+2, fmt.Sprintf("goroutines %d (before %d), files %d (before %d)", g, g0, f, f0)
	})
}

// logged checks the case's access line: there, and with a cause when the request failed.
func (m *matrix) logged(t *testing.T, id string, wantCause bool) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, "the case's access line", func() (bool, string) {
		for _, line := range strings.Split(m.e.out.String(), "\n") {
			if strings.Contains(line, "msg=access") && strings.Contains(line, "request_id="+id+" ") {
				return !wantCause || strings.Contains(line, " cause="), line
			}
		}
		return false, "no line"
	})
}
