package cellrouter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/testnet"
	"gitlab.com/edge/edge/wire"
)

// heldCell holds every jobs/request until release is called, then answers it 201 with a job;
// it records canceled requests.
type heldCell struct {
	srv      *http.Server
	url      *url.URL
	mu       sync.Mutex
	release  chan struct{}
	held     int
	canceled int
}

func newHeldCell(t *testing.T) *heldCell {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &heldCell{release: make(chan struct{})}
	c.url, _ = url.Parse("http://" + ln.Addr().String())
	c.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c.mu.Lock()
		c.held++
		release := c.release
		c.mu.Unlock()
		select {
		case <-release:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Gitlab-Last-Update", "q2")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":2000001,"token":"glcbt-x"}`)
		case <-r.Context().Done():
			c.mu.Lock()
			c.canceled++
			c.mu.Unlock()
		}
	})}
	go c.srv.Serve(ln)
	t.Cleanup(func() { c.srv.Close() })
	return c
}

func (c *heldCell) counts() (held, canceled int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held, c.canceled
}

func (c *heldCell) answer() {
	c.mu.Lock()
	close(c.release)
	c.release = make(chan struct{})
	c.mu.Unlock()
}

// parkingFront is a front with parking on a real listener, its runner proxy sending cell 2's
// traffic to cell.
func parkingFront(t *testing.T, cell *heldCell) (addr string, pk *wire.Parking) {
	return parkingFrontTo(t, cell.url)
}

func parkingFrontTo(t *testing.T, cell2 *url.URL) (addr string, pk *wire.Parking) {
	addr, pk, _, _ = guardedParkingFront(t, cell2, nil)
	return addr, pk
}

// parkPoll sends a jobs/request on a new connection and waits until it is parked.
func parkPoll(t *testing.T, addr string, pk *wire.Parking) net.Conn {
	t.Helper()
	conn := runnerConn(t, addr)
	io.WriteString(conn, jobsRequest(t, ""))
	poll.Until(t, 5*time.Second, "the poll parked", func() bool { return pk.Held() == 1 })
	return conn
}

// runnerConn is a runner's connection to the front at addr, closed when the test ends.
func runnerConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func jobsRequest(t *testing.T, extra string) string {
	body := `{"token":"` + routable(t, 2) + `","last_update":"q1"}`
	return fmt.Sprintf("POST /api/v4/jobs/request HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s", len(body), extra, body)
}

// A held poll is parked; the cell's answer reaches the runner whole, and the runner's next
// request goes on the same connection.
func TestParkedPollAnsweredAndKeptAlive(t *testing.T) {
	cell := newHeldCell(t)
	addr, pk := parkingFront(t, cell)
	conn := runnerConn(t, addr)
	br := bufio.NewReader(conn)
	for round := range 2 {
		io.WriteString(conn, jobsRequest(t, ""))
		poll.Until(t, 5*time.Second, "the poll parked", func() bool { return pk.Held() == 1 })
		cell.answer()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated || string(body) != `{"id":2000001,"token":"glcbt-x"}` ||
			resp.Header.Get("X-Gitlab-Last-Update") != "q2" || resp.Header.Get("X-Request-Id") == "" || resp.Close {
			t.Fatalf("round %d: %d %q %v", round, resp.StatusCode, body, resp.Header)
		}
		poll.Until(t, 5*time.Second, "the poll answered", func() bool { return pk.Held() == 0 })
	}
}

// A runner that goes away while its poll is parked cancels the cell's request: no job is
// handed to nobody.
func TestParkedPollClientGoneCancelsTheCell(t *testing.T) {
	cell := newHeldCell(t)
	addr, pk := parkingFront(t, cell)
	conn := parkPoll(t, addr, pk)
	conn.Close()
	poll.Until(t, 5*time.Second, "the cell's request canceled", func() bool { _, c := cell.counts(); return c == 1 && pk.Held() == 0 })
}

// A poll parked at drain is answered within the grace, or closed when it ends.
func TestParkedPollDrain(t *testing.T) {
	cell := newHeldCell(t)
	addr, pk := parkingFront(t, cell)
	conn := parkPoll(t, addr, pk)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	pk.Drain(ctx)
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("a parked poll outlived the drain's grace")
	}
	poll.Until(t, 5*time.Second, "the cell's request canceled", func() bool { _, c := cell.counts(); return c == 1 })
}

// A request with Connection: close is not parked and is answered as before.
func TestConnectionCloseNotParked(t *testing.T) {
	cell := newHeldCell(t)
	addr, pk := parkingFront(t, cell)
	conn := runnerConn(t, addr)
	io.WriteString(conn, jobsRequest(t, "Connection: close\r\n"))
	poll.Until(t, 5*time.Second, "the cell holds the poll", func() bool { h, _ := cell.counts(); return h == 1 })
	if n := pk.Held(); n != 0 {
		t.Errorf("%d parked", n)
	}
	cell.answer()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusCreated || !resp.Close {
		t.Fatalf("%v %v", resp, err)
	}
}

// A poll the cell answers at once is answered by its handler, never parked.
func TestPollAnsweredAtOnceNotParked(t *testing.T) {
	cell := newHeldCell(t)
	close(cell.release) // every poll answered at once
	addr, pk := parkingFront(t, cell)
	conn := runnerConn(t, addr)
	br := bufio.NewReader(conn)
	for range 3 {
		io.WriteString(conn, jobsRequest(t, ""))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if pk.Parked() != 0 {
		t.Errorf("%d polls answered at once were parked", pk.Parked())
	}
}

// A poll the cell reads and then drops, on a connection it had kept alive, is not sent again
// (it is a POST): the runner gets 502, and nothing stays parked.
func TestHeldPollDroppedByTheCellIsNotSentTwice(t *testing.T) {
	cellAddr, seen := testnet.FlakyCell(t) // answers a connection's first request, drops its second
	u, _ := url.Parse("http://" + cellAddr)
	addr, pk := parkingFrontTo(t, u)
	conn := runnerConn(t, addr)
	br := bufio.NewReader(conn)
	for i, want := range []int{http.StatusOK, http.StatusBadGateway} {
		io.WriteString(conn, jobsRequest(t, ""))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("poll %d: status %d, want %d", i, resp.StatusCode, want)
		}
	}
	if n := seen(http.MethodPost); n != 2 {
		t.Errorf("the cell read %d polls, want 2 (the dropped one never again)", n)
	}
	if n := pk.Held(); n != 0 {
		t.Errorf("%d polls parked", n)
	}
}
