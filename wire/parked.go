package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"
)

// parkSlot rides a long poll's context through the reverse proxy: wanted asks the cell transport
// to send the request and park; conn is where it went out, for the second pass to read from.
type parkSlot struct {
	wanted bool
	conn   *inlineConn
}

type parkKey struct{}

func parkSlotOf(ctx context.Context) *parkSlot {
	s, _ := ctx.Value(parkKey{}).(*parkSlot)
	return s
}

// parked is one long poll whose client connection edge holds while the cell holds the request.
type parked struct {
	parking  *Parking
	client   net.Conn
	tls      bool
	upstream *inlineConn
	rec      *recorder
	// answer runs the reverse proxy's second pass: it reads the cell's answer through the slot
	// and writes it to w, under ctx (the request's values, the answer's own end).
	reqCtx context.Context
	answer func(ctx context.Context, w *recorder)
	tails  []func() // what the proxy and the front do at the end of a request, in order

	settled    atomic.Bool
	clientDone chan struct{}
	pending    []byte // bytes the client sent after its request (pipelined), kept for the server
}

// then adds what is left of a request to do once the poll is answered.
func (p *parked) then(f func()) { p.tails = append(p.tails, f) }

// start watches both sockets; the first to speak settles the poll.
func (p *parked) start() {
	p.parking.hold(p)
	g := p.parking.guard
	g.Go("parked_poll", p.watchClient)
	go func() {
		defer g.Recover("parked_poll", p.crashed)
		p.watchCell()
	}()
}

func (p *parked) watchCell() {
	p.upstream.awaitReadable() // an answer, the cell closing, or the header timeout: all read in the second pass
	if p.settled.CompareAndSwap(false, true) {
		p.finish()
	}
}

// watchClient reads the runner's side while the poll is parked: the end of the connection
// means the runner went away; bytes of a next request are kept (readRunner).
func (p *parked) watchClient() {
	defer close(p.clientDone)
	if _, err := p.readRunner(); err == nil || isTimeout(err) {
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
	p.client.SetReadDeadline(time.Unix(1, 0))
	<-p.clientDone
	p.client.SetReadDeadline(time.Time{})
	keep := len(p.pending) == 0 || !p.tls
	w := newConnWriter(p.client, !keep || !p.parking.accepting())
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
	if completed && p.rec.status != 0 && w.finish() && w.keepAlive() && !(moreBytes && p.tls) && ctx.Err() == nil {
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
	if err != nil && !isTimeout(err) {
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
		err, cause := errAnswerCut, causeAnswerCut
		if crashed {
			err, cause = errPanicked, causePanic
		}
		if ctx.Err() == nil && w.discard() {
			p.rec.status, p.rec.bytes = 0, 0
			writeErr(p.rec, err)
			completed = w.finish()
		}
		p.rec.cause = cause
	})
	p.answer(ctx, p.rec)
	return true
}

// crashed ends a poll whose watch panicked: both connections are closed and the request ends.
func (p *parked) crashed(bool) {
	p.closeBoth()
	p.rec.cause = causePanic
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
	p.upstream.Close()
	p.client.Close()
	p.rec.cause = causeClientClosed
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

// isTimeout tells a deadline passing. A connection's own error is asserted first: the reuse
// check of every idle stream asks, and errors.As costs a reflection walk.
func isTimeout(err error) bool {
	if ne, ok := err.(net.Error); ok {
		return ne.Timeout()
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
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

// pollJob proxies a jobs/request. When the front can park it (HTTP/1.1 on a listener that
// takes connections back, cell transports built here, no tracing), the request is sent, the
// client's connection taken over and true returned: the answer is written, and then run, when
// the cell answers. Otherwise the poll is served here and false returned.
func (p *Proxy) pollJob(w *recorder, r *http.Request, rp *httputil.ReverseProxy, cell uint64, then func()) bool {
	pl := p.metrics.signals.startPoll(r, cell)
	var slot *parkSlot
	if p.parkable && w.parking != nil && r.ProtoMajor == 1 && r.ProtoMinor == 1 && !r.Close && w.parking.accepting() {
		slot = &parkSlot{wanted: true}
	}
	if p.admission != nil || slot != nil {
		ctx := r.Context()
		if p.admission != nil {
			ctx = context.WithValue(ctx, pollKey{}, &pl)
		}
		if slot != nil {
			ctx = context.WithValue(ctx, parkKey{}, slot)
		}
		r = r.WithContext(ctx)
	}
	rp.ServeHTTP(w, r)
	if slot == nil || slot.conn == nil {
		pl.end(w.status)
		return false
	}
	// The request is out and its answer awaited. The second pass reads it; the server's context
	// of the request ends with the handler, so the pass keeps only its values.
	answer := func(ctx context.Context, rec *recorder) { rp.ServeHTTP(rec, r.WithContext(ctx)) }
	if !w.parking.reserve() {
		answer(r.Context(), w) // the listener drains: held here, as a poll that was never parked
		pl.end(w.status)
		return false
	}
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		w.parking.unreserve()
		answer(r.Context(), w)
		pl.end(w.status)
		return false
	}
	pk := &parked{parking: w.parking, client: conn, upstream: slot.conn, rec: w, reqCtx: r.Context(), answer: answer, clientDone: make(chan struct{})}
	_, pk.tls = conn.(*tls.Conn)
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		pk.pending = bytes.Clone(b)
	}
	pk.then(func() { pl.end(w.status); then() })
	w.parked = pk
	// What stays referenced while the poll is parked must not hold the server's connection
	// (its 8 KiB of buffers): the response it wrote through, and the request body's reader.
	w.ResponseWriter = nil
	if b, ok := r.Body.(*replayBody); ok {
		b.closer = http.NoBody
	}
	return true
}
