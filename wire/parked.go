package wire

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gitlab.com/edge/edge/hop"
)

// parked is one long poll whose client connection edge holds while the cell holds the request.
type parked struct {
	parking  *Parking
	client   net.Conn
	tls      bool
	upstream *Held
	rec      *hop.Record
	// answer runs the reverse proxy's second pass: it reads the cell's answer through the Held
	// and writes it to w, under ctx (the request's values, the answer's own end).
	reqCtx context.Context
	answer func(ctx context.Context, w http.ResponseWriter)
	tails  []func() // what the proxy and the front do at the end of a request, in order

	// clientKey and cellKey are the sockets' watches by the parking's waiter; 0: the side is
	// watched by a goroutine of its own. Set while Start holds keys.
	keys               sync.Mutex
	clientKey, cellKey uint64
	settled            atomic.Bool
	clientDone         chan struct{}
	pending            []byte // bytes the client sent after its request (pipelined), kept for the server
}

// Then adds what is left of a request to do once the poll is answered.
func (p *parked) Then(f func()) { p.tails = append(p.tails, f) }

// Start watches both sockets; the first to speak settles the poll. The parking's waiter watches
// them without a goroutine; a side it cannot watch (a runner that already sent more, a
// connection wrapped by something that may hold bytes) gets a goroutine of its own.
func (p *parked) Start() {
	p.parking.hold(p)
	g, w := p.parking.guard, p.parking.waiter
	p.keys.Lock()
	defer p.keys.Unlock()
	var ok bool
	if len(p.pending) == 0 {
		p.clientKey, ok = w.add(p.client, time.Time{}, p.watchClient)
	}
	if !ok {
		g.Go("parked_poll", p.watchClient)
	}
	// The answer's start, the cell closing, or the header timeout: all read in the second pass.
	if p.cellKey, ok = w.add(p.upstream.c.Conn, p.upstream.deadline, p.cellSpoke); !ok {
		go func() {
			defer g.Recover("parked_poll", p.crashed)
			p.upstream.awaitReadable()
			p.cellSpoke()
		}()
	}
}

// unwatch ends the waiter's watch of one side (the cell's, or the runner's); true when it was
// still waiting.
func (p *parked) unwatch(cell bool) bool {
	p.keys.Lock()
	defer p.keys.Unlock()
	key := p.clientKey
	if cell {
		key = p.cellKey
	}
	return p.parking.waiter.remove(key)
}

// cellSpoke settles the poll with the cell's answer, unless the runner's end settled it first.
func (p *parked) cellSpoke() {
	defer p.parking.guard.Recover("parked_poll", p.crashed)
	if !p.settled.CompareAndSwap(false, true) {
		return
	}
	p.parking.answering <- struct{}{}
	defer func() { <-p.parking.answering }()
	p.finish()
}

// watchClient reads the runner's side while the poll is parked: the end of the connection
// means the runner went away; bytes of a next request are kept (readRunner).
func (p *parked) watchClient() {
	defer close(p.clientDone)
	if _, err := p.readRunner(); err == nil || hop.IsTimeout(err) {
		return // finish stopped the watch, or maxPending is read
	}
	if p.settled.CompareAndSwap(false, true) {
		p.gone()
	}
}

// readRunner reads the runner's side until a deadline stops it or it ends. Bytes are the start
// of a next request (pipelined), kept in pending for when the connection goes back to the
// server, and read on (up to maxPending) so that a runner that resets after them is still seen
// to go. It says whether bytes came, and how the read ended (nil: maxPending read).
func (p *parked) readRunner() (got bool, err error) {
	var b [1]byte
	n, err := p.client.Read(b[:])
	if n == 0 {
		return false, err
	}
	p.pending = append(p.pending, b[0])
	return true, p.readPending()
}

// maxPending bounds what a parked poll keeps of the runner's next request while it waits.
const maxPending = 64 << 10

// readPending reads more of a pipelined next request into pending, until maxPending (nil) or an
// error (a deadline when the poll is answered).
func (p *parked) readPending() error {
	buf := make([]byte, 4<<10)
	for len(p.pending) < maxPending {
		n, err := p.client.Read(buf[:min(len(buf), maxPending-len(p.pending))])
		p.pending = append(p.pending, buf[:n]...)
		if err != nil {
			return err
		}
	}
	return nil
}

// answerBound is how long a parked poll's answer, once the cell has begun it, may take to be read
// from the cell and written to the runner: a job's JSON or an empty 204, so a cell that stalls
// mid-answer or a runner that stops reading is cut after it instead of holding both sockets.
const answerBound = 30 * time.Second

// finish writes the cell's answer to the client and gives the connection back. While it is
// written, the runner's side is still watched: a runner gone mid-answer ends the cell's request.
func (p *parked) finish() {
	if p.unwatch(false) {
		close(p.clientDone) // the runner never spoke: no watch to stop
	} else {
		p.client.SetReadDeadline(time.Unix(1, 0))
		<-p.clientDone
		p.client.SetReadDeadline(time.Time{})
	}
	keep := len(p.pending) == 0 || !p.tls
	w := newConnWriter(p.client, !keep || !p.parking.Accepting())
	p.rec.ResponseWriter = w
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.reqCtx), answerBound)
	defer cancel()
	p.client.SetWriteDeadline(time.Now().Add(answerBound))
	watched := make(chan bool, 1)
	p.parking.guard.Go("parked_poll", func() { watched <- p.watchDuringAnswer(cancel) })
	completed := p.answerContained(ctx, w)
	p.client.SetReadDeadline(time.Unix(1, 0))
	moreBytes := <-watched
	// Nothing written (the runner left as the answer began): the connection closes, with no
	// answer made up for it.
	if completed && p.rec.Status != 0 && w.finish() && w.keepAlive() && !(moreBytes && p.tls) && ctx.Err() == nil {
		p.client.SetDeadline(time.Time{})
		var c net.Conn = p.client
		if len(p.pending) > 0 {
			c = &prefixedConn{Conn: p.client, prefix: bytes.NewReader(p.pending)}
		}
		p.parking.giveBack(c)
	} else {
		p.client.Close()
	}
	p.end()
}

// watchDuringAnswer reads the runner's side while the answer is written (readRunner): its end
// cancels the answer. True when bytes of a next request came.
func (p *parked) watchDuringAnswer(cancel context.CancelFunc) bool {
	more, err := p.readRunner()
	if err != nil && !hop.IsTimeout(err) {
		cancel()
	}
	return more
}

// answerContained runs the reverse proxy's second pass. A panic in it ends this poll alone:
// http.ErrAbortHandler (the answer cut short by the cell or the runner) or a crash is answered
// 502 with its cause when none of the answer had reached the runner, and the connection closes.
// False when the answer did not complete.
func (p *parked) answerContained(ctx context.Context, w *connWriter) (completed bool) {
	defer p.parking.guard.Recover("parked_poll", func(crashed bool) {
		completed = false
		p.upstream.Close()
		err, cause := hop.ErrAnswerCut, hop.CauseAnswerCut
		if crashed {
			err, cause = hop.ErrPanicked, hop.CausePanic
		}
		if ctx.Err() == nil && w.discard() {
			p.rec.Status, p.rec.Bytes = 0, 0
			hop.Error(p.rec, err)
			completed = w.finish()
		}
		p.rec.Cause = cause
	})
	p.answer(ctx, p.rec)
	return true
}

// crashed ends a poll whose watch panicked: both connections are closed and the request ends.
func (p *parked) crashed(bool) {
	p.closeBoth()
	p.rec.Cause = hop.CausePanic
	p.end()
}

// gone: the runner closed its connection; the cell's request is closed with it, as a canceled
// held poll's is.
func (p *parked) gone() {
	p.closeBoth()
	p.end()
}

// abandon ends a poll the drain's grace left: both connections are closed.
func (p *parked) abandon() {
	if p.settled.CompareAndSwap(false, true) {
		p.gone()
	}
}

// closeBoth closes the runner's connection and the cell's request, as for a runner gone.
func (p *parked) closeBoth() {
	// The watches end before the sockets close: a closed socket's number may be another's.
	p.unwatch(true)
	p.unwatch(false)
	p.upstream.Close()
	p.client.Close()
	p.rec.Cause = hop.CauseClientClosed
}

func (p *parked) end() {
	p.runTails()
	p.parking.done(p)
}

func (p *parked) runTails() {
	for _, f := range p.tails {
		f()
	}
}

// prefixedConn serves the bytes a client sent while its poll was parked before the rest.
type prefixedConn struct {
	net.Conn
	mu     sync.Mutex
	prefix *bytes.Reader
}

func (c *prefixedConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if c.prefix != nil && c.prefix.Len() > 0 {
		defer c.mu.Unlock()
		return c.prefix.Read(b)
	}
	c.mu.Unlock()
	return c.Conn.Read(b)
}
