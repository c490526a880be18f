package engine

import (
	"context"
	"sync"
	"time"
)

// watchAfter is how long a request runs before the engine watches its connection for the client
// going away: a short request never pays for the watch, a long one (a long poll not parked, a
// slow cell) has its context canceled when the client leaves, as net/http's would.
const watchAfter = 100 * time.Millisecond

// watcher reads a serving connection in the background, once the request's body is read, to
// learn that the client went away.
type watcher struct {
	c        *conn
	timer    *time.Timer
	mu       sync.Mutex
	armed    bool // a request is being served
	reading  bool
	readDone chan struct{}
	cancel   context.CancelFunc
	body     *body
	gone     bool // the client went away during the request
}

// arm watches the request from watchAfter on; cancel ends its context when the client goes.
func (w *watcher) arm(cancel context.CancelFunc, b *body) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.cancel, w.body, w.gone = true, cancel, b, false
	if w.timer == nil {
		w.timer = time.AfterFunc(watchAfter, w.c.s.guard.Func("engine watch", w.watch))
	} else {
		w.timer.Reset(watchAfter)
	}
}

func (w *watcher) watch() {
	w.mu.Lock()
	if !w.armed || w.reading {
		w.mu.Unlock()
		return
	}
	if w.body != nil && !w.body.done.Load() {
		w.timer.Reset(watchAfter) // the handler still reads the body: its reads see the client go
		w.mu.Unlock()
		return
	}
	w.reading, w.readDone = true, make(chan struct{})
	// A bodiless request's connection kept its idle deadline. Cleared under the lock: disarm's
	// cut (a deadline long past) comes after it, never before.
	w.c.rwc.SetReadDeadline(time.Time{})
	w.mu.Unlock()
	_, err := w.c.br.Peek(1) // a pipelined request's byte stays buffered for its turn
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reading = false
	close(w.readDone)
	if err != nil && w.armed {
		w.gone = true
		w.cancel()
	}
}

// disarm ends the watch: a read in progress is cut short and awaited, so that the connection's
// reader is the serving goroutine's alone again.
func (w *watcher) disarm() {
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.armed = false
	reading, done := w.reading, w.readDone
	w.mu.Unlock()
	if reading {
		w.c.rwc.SetReadDeadline(longAgo())
		<-done
		w.c.rwc.SetReadDeadline(time.Time{})
	}
}
