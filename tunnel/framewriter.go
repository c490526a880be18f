package tunnel

import (
	"io"
	"net"
	"sync"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// yamuxHeaderSize and typeData follow yamux's frame header: version, type, flags (2), stream id
// (4), length (4).
const (
	yamuxHeaderSize = 12
	yamuxTypeData   = 0
	// coalesceLimit is the largest body queued with its header; a larger one is written apart.
	coalesceLimit = 16 << 10
	// maxQueued bounds the frames queued for the flusher; the send loop waits beyond it.
	maxQueued = 256 << 10
	// closeFlushTimeout bounds how long Close waits for queued frames to be written.
	closeFlushTimeout = time.Second
)

// frameWriter sends yamux's frames. yamux's send loop writes one frame at a time, a data frame's
// header and body separately, each a system call. frameWriter joins a header to its body and
// queues small frames for a flusher goroutine, which writes all that is queued at once: while it
// writes, the send loop queues the next frames, so under load one system call carries many
// streams' frames, where it took one each (alone, a frame costs one hand-off to the flusher
// more). A large body is written by the send loop itself once the queue is empty, so a transfer
// is not copied once more. close writes what is queued before closing (a drain message just
// sent, say), for up to closeFlushTimeout. Only the session's send loop calls Write.
type frameWriter struct {
	w    io.Writer
	hdr  [yamuxHeaderSize]byte
	held bool // hdr is a data frame's header whose body comes next

	mu       sync.Mutex
	cond     sync.Cond
	queue    []byte // frames to write, in order
	spare    []byte // the queue written last, for reuse
	writing  bool   // a write to w is under way
	flushing bool   // the flusher goroutine runs
	closing  bool
	err      error // the first failure: every later Write returns it

	guard *guard.Guard // the flusher's
}

func newFrameWriter(w io.Writer) *frameWriter {
	f := &frameWriter{w: w}
	f.cond.L = &f.mu
	return f
}

func (f *frameWriter) Write(p []byte) (int, error) {
	if !f.held && len(p) == yamuxHeaderSize && p[1] == yamuxTypeData && (p[8]|p[9]|p[10]|p[11]) != 0 {
		// A data frame's body follows in the next Write; p is yamux's buffer, reused later.
		copy(f.hdr[:], p)
		f.held = true
		return len(p), nil
	}
	var hdr []byte
	if f.held {
		f.held = false
		hdr = f.hdr[:]
	}
	f.mu.Lock()
	if len(p) > coalesceLimit {
		for f.err == nil && (len(f.queue) > 0 || f.writing) {
			f.cond.Wait()
		}
		if f.err != nil {
			err := f.err
			f.mu.Unlock()
			return 0, err
		}
		f.writing = true
		f.mu.Unlock()
		_, err := (&net.Buffers{hdr, p}).WriteTo(f.w)
		f.mu.Lock()
		f.writing = false
		f.fail(err)
		f.cond.Broadcast()
		f.mu.Unlock()
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	for f.err == nil && len(f.queue) >= maxQueued {
		f.cond.Wait()
	}
	if f.err != nil {
		err := f.err
		f.mu.Unlock()
		return 0, err
	}
	f.queue = append(append(f.queue, hdr...), p...)
	if !f.flushing {
		f.flushing = true
		go func() { defer f.guard.Recover("tunnel_flush", f.crashed); f.flush() }()
	} else {
		f.cond.Broadcast()
	}
	f.mu.Unlock()
	return len(p), nil
}

// flush writes what is queued, all of it at once, until the writer fails or closes.
func (f *frameWriter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		for f.err == nil && !f.closing && (len(f.queue) == 0 || f.writing) {
			f.cond.Wait()
		}
		if f.err != nil || len(f.queue) == 0 {
			f.flushing = false
			f.cond.Broadcast()
			return
		}
		buf := f.queue
		f.queue, f.spare = f.spare[:0], nil
		f.writing = true
		err := f.writeUnlocked(buf)
		f.writing = false
		if cap(buf) <= 2*maxQueued {
			f.spare = buf[:0]
		}
		f.fail(err)
		f.cond.Broadcast()
	}
}

// writeUnlocked writes buf with f.mu released; the lock is taken again even when the write
// panics, so flush's deferred unlock finds it held (unlocking an unlocked mutex is fatal, not a
// panic the guard could contain).
func (f *frameWriter) writeUnlocked(buf []byte) error {
	f.mu.Unlock()
	defer f.mu.Lock()
	_, err := f.w.Write(buf)
	return err
}

// crashed is the flusher's end after a panic: the writer fails, so the session's send loop gets
// an error and the connection closes, and nothing waits for a flusher that is gone.
func (f *frameWriter) crashed(bool) {
	f.mu.Lock()
	f.fail(errFlusherCrashed)
	f.flushing, f.writing = false, false
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *frameWriter) fail(err error) {
	if err != nil && f.err == nil {
		f.err = err
	}
}

// close writes what is queued (for up to closeFlushTimeout), then closes c.
func (f *frameWriter) close(c io.Closer) error {
	timer := time.AfterFunc(closeFlushTimeout, func() { // guard: only fails the writer under its lock
		f.mu.Lock()
		f.fail(net.ErrClosed)
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer timer.Stop()
	f.mu.Lock()
	f.closing = true
	f.cond.Broadcast()
	for f.err == nil && (len(f.queue) > 0 || f.writing) {
		f.cond.Wait()
	}
	f.fail(net.ErrClosed)
	f.cond.Broadcast()
	f.mu.Unlock()
	return c.Close()
}
