package wire

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/guard"
)

// Parking holds jobs/request long polls off the HTTP server while their cell holds them. A
// held poll through net/http costs two goroutines (the handler, deep in the proxy, and the
// server's background read) and the connection's 10 KiB of buffers for as long as the cell
// holds it; parked, it costs its two sockets and two shallow goroutines. The handler sends the
// request, takes the client's connection over and returns; when the cell answers, the answer is
// written through the same proxy path and the connection is handed back to the server for the
// runner's next request (keep-alive), through Listener.
type Parking struct {
	guard *guard.Guard
	// waiter holds the parked polls' sockets (nil: each parked poll waits on two goroutines
	// instead); it ends with the drain.
	waiter *waiter
	// answering bounds the answers written at once: a cell that releases thousands of held
	// polls together gets them answered in turn, not with thousands of answers' buffers at once.
	answering chan struct{}
	returned  chan net.Conn
	stop      chan struct{} // closed when the listener drains
	mu        sync.Mutex
	closing   bool
	held      map[*parked]struct{}
	total     int // polls parked since the start
	wg        sync.WaitGroup
}

func NewParking(g *guard.Guard) *Parking {
	return &Parking{guard: g, waiter: newWaiter(g), answering: make(chan struct{}, maxAnswering), returned: make(chan net.Conn), stop: make(chan struct{}), held: map[*parked]struct{}{}}
}

// maxAnswering is how many parked polls' answers are written at once. An answer is small (a
// job's JSON or an empty 204) and goes into the socket's buffer at once, so the queue drains
// fast; its bound keeps the memory of a release of 10,000 polls to a few hundred answers'.
const maxAnswering = 256

// Accepting says whether a new poll may be parked (not once the listener drains).
func (pk *Parking) Accepting() bool {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return !pk.closing
}

// reserve takes a place for a poll about to be parked, unless the listener drains: then the poll
// stays with its handler, which the server's shutdown waits for, and is answered there. Deciding
// before the connection is taken over leaves no poll between the two (one taken over as the
// drain began was closed, its cell's request canceled).
func (pk *Parking) reserve() bool {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if pk.closing {
		return false
	}
	pk.total++
	pk.wg.Add(1)
	return true
}

// unreserve gives back a place a poll could not take (its connection could not be taken over).
func (pk *Parking) unreserve() { pk.wg.Done() }

// hold parks p in its reserved place.
func (pk *Parking) hold(p *parked) {
	pk.mu.Lock()
	pk.held[p] = struct{}{}
	pk.mu.Unlock()
}

func (pk *Parking) done(p *parked) {
	pk.mu.Lock()
	delete(pk.held, p)
	pk.mu.Unlock()
	pk.wg.Done()
}

// Held is how many polls are parked now.
func (pk *Parking) Held() int {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return len(pk.held)
}

// Parked is how many polls were parked since the start.
func (pk *Parking) Parked() int {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return pk.total
}

// giveBack hands an answered poll's connection to the server for the next request; once the
// listener drains it is closed instead.
func (pk *Parking) giveBack(c net.Conn) {
	select {
	case pk.returned <- c:
	case <-pk.stop:
		c.Close()
	}
}

// StopReturning is the start of a drain: answered polls close their connections, none is
// parked any more.
func (pk *Parking) StopReturning() {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if !pk.closing {
		pk.closing = true
		close(pk.stop)
	}
}

// Drain waits for the parked polls to be answered until ctx ends, then closes those left (their
// cells see the requests canceled, as with a held poll at the end of the grace).
func (pk *Parking) Drain(ctx context.Context) {
	pk.StopReturning()
	defer pk.waiter.close()
	done := make(chan struct{})
	go func() { pk.wg.Wait(); close(done) }() // guard: cannot panic
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	pk.mu.Lock()
	left := make([]*parked, 0, len(pk.held))
	for p := range pk.held {
		left = append(left, p)
	}
	pk.mu.Unlock()
	for _, p := range left {
		p.abandon()
	}
	<-done
}

// Park takes over the connection of rec's request, whose cell holds it as held, and returns true:
// the request's end is then rec.Later, which answer (the proxy's second pass, reading the answer
// through held) writes when the cell answers, or when the runner goes, or when the drain's grace
// ends. False when the poll cannot be parked (the listener drains, the connection cannot be taken
// over): it is the handler's to answer, as a poll that was never parked.
func (pk *Parking) Park(rec *hop.Record, r *http.Request, held *Held, answer func(ctx context.Context, w http.ResponseWriter)) bool {
	if !pk.reserve() {
		return false
	}
	conn, brw, err := http.NewResponseController(rec.ResponseWriter).Hijack()
	if err != nil {
		pk.unreserve()
		return false
	}
	p := &parked{parking: pk, client: conn, upstream: held, rec: rec, reqCtx: r.Context(), answer: answer, clientDone: make(chan struct{})}
	_, p.tls = conn.(*tls.Conn)
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		p.pending = bytes.Clone(b)
	}
	rec.Later = p
	// What stays referenced while the poll is parked must not hold the server's connection (its
	// 8 KiB of buffers): the response it wrote through.
	rec.ResponseWriter = nil
	return true
}

// Listener yields ln's connections and those handed back after a parked poll's answer.
func (pk *Parking) Listener(ln net.Listener) net.Listener {
	l := &parkingListener{Listener: ln, pk: pk, accepted: make(chan acceptResult), closed: make(chan struct{}), pumped: make(chan struct{})}
	pk.guard.Go("listener", l.pump)
	return l
}

type acceptResult struct {
	c   net.Conn
	err error
}

type parkingListener struct {
	net.Listener
	pk        *Parking
	accepted  chan acceptResult
	closed    chan struct{}
	pumped    chan struct{} // closed when pump has returned
	closeOnce sync.Once
}

func (l *parkingListener) pump() {
	defer close(l.pumped)
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- acceptResult{c, err}:
		case <-l.closed:
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil && !isTemporary(err) {
			return
		}
	}
}

func (l *parkingListener) Accept() (net.Conn, error) {
	select {
	case a := <-l.accepted:
		return a.c, a.err
	case c := <-l.pk.returned:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and returns once the accept loop has ended.
func (l *parkingListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	err := l.Listener.Close()
	<-l.pumped
	return err
}

func isTemporary(err error) bool {
	var ne interface{ Temporary() bool }
	return errors.As(err, &ne) && ne.Temporary()
}
