//go:build linux

package cellrouter

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// parkedGoroutines counts the goroutines at work on a parked poll.
func parkedGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("wire.(*parked)")) {
			n++
		}
	}
	return n
}

// TestParkedPollsHoldNoGoroutine: on Linux, polls parked with neither side speaking are waited
// for by the parking's one waiter, not by goroutines of their own; each is still answered, and a
// runner that leaves is still seen at once.
func TestParkedPollsHoldNoGoroutine(t *testing.T) {
	cell := newHeldCell(t)
	addr, pk := parkingFront(t, cell)
	const polls = 50
	readers := make([]*bufio.Reader, polls)
	for i := range readers {
		conn := runnerConn(t, addr)
		io.WriteString(conn, jobsRequest(t, ""))
		readers[i] = bufio.NewReader(conn)
	}
	poll.Until(t, 5*time.Second, "the polls parked", func() bool { return pk.Held() == polls })
	if n := parkedGoroutines(); n != 0 {
		t.Errorf("%d goroutines at work on %d parked polls, want none", n, polls)
	}
	cell.answer()
	for i, br := range readers {
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("poll %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	poll.Until(t, 5*time.Second, "the polls answered", func() bool { return pk.Held() == 0 })

	gone := parkPoll(t, addr, pk)
	gone.Close()
	poll.Until(t, 5*time.Second, "the cell's request canceled", func() bool { _, c := cell.counts(); return c == 1 && pk.Held() == 0 })
}
