package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"gitlab.com/edge/edge/bench"
)

const (
	// resetRunners is how many runners reset a parked poll in one runner-reset-parked, at once.
	resetRunners = 5
	// resetHeld: a job request not answered this long after it was sent is held by the cell,
	// and parked by edge (which parks after 50 ms).
	resetHeld = 250 * time.Millisecond
	// resetTries bounds the job requests a reset runner sends until one is held: a cell answers
	// at once when the runner's last_update is not its current one or it has a job queued.
	resetTries = 10
	// resetByteWait is left between the byte of a next request and the reset, for edge to read it.
	resetByteWait = 50 * time.Millisecond
)

// resetPlan is one runner of a runner-reset-parked, drawn from the fault script's seed.
type resetPlan struct {
	runner   *runner
	edge     int  // 0..2; the witness too: its goroutines after the soak would show a leaked poll
	withByte bool // send one byte of a next request before the reset
}

// resetPoll is a job request its runner reset while the cell held it and edge had it parked.
type resetPoll struct {
	Req      string
	Fault    int
	Runner   int
	Edge     int // 1..3
	Cell     uint64
	WithByte bool
	Sent     time.Time
	Reset    time.Time
	// AnswerBegun: bytes of an answer had reached the runner's socket when it reset.
	AnswerBegun bool
}

// planResets draws the runners of fault n: a cell and an edge each, the first two of them
// sending a byte of a next request before the reset. Their ids are 1000n+1, ...: apart from the
// runner loops'.
func (s *soak) planResets(rng *rand.Rand, n int) []resetPlan {
	out := make([]resetPlan, 0, resetRunners)
	for k := range resetRunners {
		seed := rng.Uint64()
		cell := uint64(rng.IntN(3) + 1)
		r, err := newRunner(1000*n+k+1, cell, orgOf(cell, 1), rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			continue // MintRoutable fails only on bad claims
		}
		out = append(out, resetPlan{runner: r, edge: rng.IntN(3), withByte: k < 2})
	}
	return out
}

// resetParked is a runner-reset-parked: every planned runner at once sends job requests on a
// connection of its own to its edge until one is held, then resets the connection (SO_LINGER 0),
// after a byte of a next request when planned. A job a runner gets on the way is worked as the
// runner loops do.
func (s *soak) resetParked(ctx context.Context, f *fault, plans []resetPlan) error {
	var wg sync.WaitGroup
	results := make([]*resetPoll, len(plans))
	for i, pl := range plans {
		wg.Go(func() { results[i] = s.resetOne(ctx, f.N, pl) })
	}
	wg.Wait()
	var parked, withByte, begun int
	byEdge := map[string]int{}
	for _, rp := range results {
		if rp == nil {
			continue
		}
		parked++
		byEdge[fmt.Sprintf("edge%d", rp.Edge)]++
		if rp.WithByte {
			withByte++
		}
		if rp.AnswerBegun {
			begun++
		}
	}
	note := fmt.Sprintf("%d of %d polls parked and reset (%d after a byte of a next request; via %s)", parked, len(plans), withByte, countList(byEdge))
	if begun > 0 {
		note += fmt.Sprintf("; %d had an answer arriving as they reset", begun)
	}
	s.faults.update(f, func(f *fault) { f.Note = note })
	logf(s.out, "fault %d: %s", f.N, note)
	if parked == 0 {
		return fmt.Errorf("no job request was held in %d tries of each runner", resetTries)
	}
	return ctx.Err()
}

// resetOne is one runner of a runner-reset-parked; the poll it reset, nil when none was held.
func (s *soak) resetOne(ctx context.Context, n int, pl resetPlan) *resetPoll {
	r := pl.runner
	addr := s.c.edges[pl.edge].public
	var conn *net.TCPConn
	var br *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	drop := func() { conn.Close(); conn = nil }
	for range resetTries {
		if ctx.Err() != nil {
			return nil
		}
		id := s.rec.nextID()
		a := attempt{Kind: kindPoll, Method: http.MethodPost, Req: id, Edge: pl.edge + 1, Start: time.Now(), RunnerID: r.idx, Org: r.org, Conns: 1}
		failed := func(err error) {
			a.End, a.Source, a.Cause, a.Detail = time.Now(), sourceNone, transportCause(err), err.Error()
			s.rec.add(a)
			if conn != nil {
				drop()
			}
			_ = sleep(ctx, 200*time.Millisecond)
		}
		if conn == nil {
			d := net.Dialer{Timeout: 3 * time.Second}
			nc, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				failed(err)
				continue
			}
			conn, br = nc.(*net.TCPConn), bufio.NewReader(nc)
		}
		body := pollBody(r)
		head := fmt.Sprintf("POST /api/v4/jobs/request HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\n\r\n",
			addr, len(body), bench.RequestIDHeader, id)
		_ = conn.SetWriteDeadline(time.Now().Add(3 * time.Second))
		if _, err := conn.Write(append([]byte(head), body...)); err != nil {
			failed(err)
			continue
		}
		sent := time.Now()
		_ = conn.SetReadDeadline(sent.Add(resetHeld))
		if _, err := br.Peek(1); errors.Is(err, os.ErrDeadlineExceeded) {
			return s.reset(conn, br, a, n, pl, sent)
		}
		// An answer came (or the connection ended): read it as a runner does.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			failed(err)
			continue
		}
		b, berr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		a.End = time.Now()
		classify(&a, resp, b, berr)
		rc := s.takeAnswer(&a, r, resp.Header, b)
		s.rec.add(a)
		if berr != nil || resp.Close {
			drop()
		}
		if rc != nil {
			s.busy.Add(1)
			s.work(ctx, r, rc)
			s.busy.Add(-1)
		} else if !a.OK {
			_ = sleep(ctx, time.Second)
		}
	}
	return nil
}

// reset ends a held poll: a byte of a next request when planned, then RST.
func (s *soak) reset(conn *net.TCPConn, br *bufio.Reader, a attempt, n int, pl resetPlan, sent time.Time) *resetPoll {
	rp := &resetPoll{Req: a.Req, Fault: n, Runner: pl.runner.idx, Edge: pl.edge + 1, Cell: pl.runner.cell, WithByte: pl.withByte, Sent: sent}
	if pl.withByte {
		_, _ = conn.Write([]byte("P"))
		time.Sleep(resetByteWait)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	if _, err := br.Peek(1); err == nil {
		rp.AnswerBegun = true
	}
	_ = conn.SetLinger(0)
	conn.Close() // RST: SO_LINGER 0; the deferred Close of the caller is a no-op
	rp.Reset = time.Now()
	a.Kind, a.End, a.Source, a.OK = kindResetPoll, rp.Reset, sourceReset, true
	a.Detail = fmt.Sprintf("held %.0f ms, then reset by the runner", rp.Reset.Sub(sent).Seconds()*1000)
	if pl.withByte {
		a.Detail += " after a byte of a next request"
	}
	s.rec.add(a)
	s.jobsMu.Lock()
	s.resets = append(s.resets, *rp)
	s.jobsMu.Unlock()
	return rp
}
