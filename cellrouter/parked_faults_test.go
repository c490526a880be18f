package cellrouter

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/wire"
)

// scriptedCell answers each request on its connections with what answer writes on the raw
// connection, after reading the request whole; it counts the requests it read.
type scriptedCell struct {
	url    *url.URL
	mu     sync.Mutex
	seen   int
	answer func(c net.Conn)
}

func newScriptedCell(t *testing.T, answer func(c net.Conn)) *scriptedCell {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &scriptedCell{answer: answer}
	c.url, _ = url.Parse("http://" + ln.Addr().String())
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go c.serve(conn)
		}
	}()
	return c
}

func (c *scriptedCell) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		c.mu.Lock()
		c.seen++
		c.mu.Unlock()
		c.answer(conn)
	}
}

func (c *scriptedCell) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// guardedParkingFront is parkingFrontTo with a guard whose counter the test reads, and its logs.
func guardedParkingFront(t *testing.T, cell *url.URL, modify func(*Router)) (addr string, pk *wire.Parking, g *guard.Guard, logs *lockedBuffer) {
	t.Helper()
	legacy, _ := url.Parse("http://127.0.0.1:9")
	return guardedFront(t, legacy, cell, modify)
}

// guardedFront is a front with a guard and parking on a real listener: cell 1 (legacy) at
// legacy, cell 2 at cell.
func guardedFront(t *testing.T, legacy, cell *url.URL, modify func(*Router)) (addr string, pk *wire.Parking, g *guard.Guard, logs *lockedBuffer) {
	t.Helper()
	logs = &lockedBuffer{}
	g, err := guard.New(slog.New(slog.NewTextHandler(logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	pk = wire.NewParking(g)
	p := newRouter(t, []discovery.Cell{{ID: 1, URL: legacy, Legacy: true}, {ID: 2, URL: cell}}, func(o *Options) { o.Parking = pk })
	if modify != nil {
		modify(p)
	}
	edge := frontFor(t, p, front.Options{Guard: g}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: edge}
	go srv.Serve(pk.Listener(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		pk.StopReturning()
		srv.Shutdown(ctx)
		pk.Drain(ctx)
	})
	return ln.Addr().String(), pk, g, logs
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// afterPark is how long a scripted cell waits before answering so that the poll parks first.
const afterPark = 200 * time.Millisecond

// A parked poll whose answer the cell cuts short (a Content-Length promised, the connection
// closed mid-body) ends that poll's connection; the process serves on (a panic on the parked
// goroutine would have ended this test binary).
func TestParkedAnswerCutShortByTheCell(t *testing.T) {
	cell := newScriptedCell(t, func(c net.Conn) {
		time.Sleep(afterPark)
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":20")
		c.Close()
	})
	addr, pk, g, _ := guardedParkingFront(t, cell.url, nil)
	for i := range 3 {
		conn := parkPoll(t, addr, pk)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(conn)
		if err != nil {
			t.Fatalf("poll %d: reading the cut answer: %v", i, err)
		}
		// Nothing of the cut answer had reached the runner: it gets edge's 502 instead, then the
		// end of the connection.
		if !strings.HasPrefix(string(got), "HTTP/1.1 502 Bad Gateway\r\n") || !strings.Contains(string(got), `"error":"answer_cut"`) ||
			!strings.Contains(string(got), "Connection: close\r\n") {
			t.Errorf("poll %d: runner got %q, want a 502 answer_cut and the connection closed", i, got)
		}
		poll.Until(t, 5*time.Second, "the poll's end", func() bool { return pk.Held() == 0 })
	}
	if n := cell.requests(); n != 3 {
		t.Errorf("cell saw %d requests, want 3 (once each)", n)
	}
	if n := g.Contained("parked_poll"); n != 0 {
		t.Errorf("edge_panics_total{where=parked_poll} = %v, want 0: a cut answer is an abort, not a crash", n)
	}
}

// A runner that parks a poll, sends one byte of a next request and resets its connection: the
// answer's write fails; that poll ends, nothing else.
func TestParkedRunnerResetsAfterAByte(t *testing.T) {
	release := make(chan struct{})
	cell := newScriptedCell(t, func(c net.Conn) {
		select {
		case <-release:
			time.Sleep(afterPark) // a later poll parks too
		default:
			<-release
		}
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"id\":200000001}")
	})
	addr, pk, _, _ := guardedParkingFront(t, cell.url, nil)
	conn := parkPoll(t, addr, pk).(*net.TCPConn)
	io.WriteString(conn, "P")
	time.Sleep(50 * time.Millisecond) // the byte read by the watch before the reset
	conn.SetLinger(0)
	conn.Close()
	close(release)
	poll.Until(t, 5*time.Second, "the poll's end", func() bool { return pk.Held() == 0 })
	// The front still serves: a next poll is parked and answered.
	next := parkPoll(t, addr, pk)
	next.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(next), nil)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("next poll: %v %v", resp, err)
	}
}

// A parked answer that stalls after its first byte is cut when the runner leaves: the cell's
// connection closes with it (nothing watched the runner once the answer began).
func TestParkedAnswerStalledRunnerLeaves(t *testing.T) {
	cellClosed := make(chan struct{})
	cell := newScriptedCell(t, func(c net.Conn) {
		time.Sleep(afterPark)
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil && !hop.IsTimeout(err) {
			close(cellClosed)
		}
	})
	addr, pk, _, _ := guardedParkingFront(t, cell.url, nil)
	conn := parkPoll(t, addr, pk)
	time.Sleep(2 * afterPark) // the answer has begun and stalls
	conn.Close()
	select {
	case <-cellClosed:
	case <-time.After(5 * time.Second):
		t.Fatal("the cell's connection was still open 5 s after the runner left")
	}
	poll.Until(t, 5*time.Second, "the poll's end", func() bool { return pk.Held() == 0 })
}

// A panic while a parked poll's answer is written (forced here in the answer's ModifyResponse)
// is contained: that runner gets a 502 with the cause, edge_panics_total{where=parked_poll}
// counts it, the log has it once with its stack, and the front serves on.
func TestParkedPollPanicContained(t *testing.T) {
	var armed sync.Once
	cell := newScriptedCell(t, func(c net.Conn) {
		time.Sleep(afterPark)
		io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
	})
	addr, pk, g, logs := guardedParkingFront(t, cell.url, func(p *Router) {
		for _, a := range p.targets[2].addrs {
			a.parker.ModifyResponse = func(*http.Response) error {
				fire := false
				armed.Do(func() { fire = true })
				if fire {
					panic("forced in a parked poll's answer")
				}
				return nil
			}
		}
	})
	conn := parkPoll(t, addr, pk)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), `"error":"panic"`) {
		t.Errorf("got %d %s, want 502 with cause panic", resp.StatusCode, body)
	}
	poll.Until(t, 5*time.Second, "the panic counted", func() bool { return g.Contained("parked_poll") == 1 })
	if n := strings.Count(logs.String(), "forced in a parked poll's answer"); n != 1 {
		t.Errorf("the panic logged %d times, want once", n)
	}
	if !strings.Contains(logs.String(), "parked_faults_test.go") {
		t.Error("the log line has no stack")
	}
	next := parkPoll(t, addr, pk)
	next.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(next), nil); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("next poll: %v %v", resp, err)
	}
}

// A runner that sends a byte of its next request while parked and then resets is still seen to
// go: the cell's request is canceled at once, not left to be answered onto a dead socket.
func TestParkedRunnerResetAfterAByteCancelsTheCell(t *testing.T) {
	cell := newHeldCell(t)
	addr, pk := parkingFront(t, cell)
	conn := parkPoll(t, addr, pk).(*net.TCPConn)
	io.WriteString(conn, "POST /api/v4/jobs/req")
	time.Sleep(50 * time.Millisecond) // read by the watch before the reset
	conn.SetLinger(0)
	conn.Close()
	poll.Until(t, 5*time.Second, "the cell's request canceled", func() bool { _, c := cell.counts(); return c == 1 && pk.Held() == 0 })
}

// A poll the cell holds when the drain begins, before edge has taken its connection over, is
// answered: it stays with its handler (the server's shutdown waits for it), never closed with
// its cell's request canceled.
func TestPollHeldAsTheDrainBeginsIsAnswered(t *testing.T) {
	cell := newHeldCell(t)
	addr, pk := parkingFront(t, cell)
	conn := runnerConn(t, addr)
	io.WriteString(conn, jobsRequest(t, ""))
	poll.Until(t, 5*time.Second, "the cell holds the poll", func() bool { held, _ := cell.counts(); return held == 1 })
	pk.StopReturning() // within the 50 ms before the poll would park
	time.Sleep(200 * time.Millisecond)
	cell.answer()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("the poll held as the drain began: %v %v, want the cell's 201", resp, err)
	}
	if _, canceled := cell.counts(); canceled != 0 {
		t.Errorf("the cell saw %d requests canceled, want none", canceled)
	}
}
