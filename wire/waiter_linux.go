//go:build linux

package wire

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// waiter waits for the sockets of parked polls on one epoll instance and one goroutine: while
// neither its runner nor its cell speaks, a parked poll costs its sockets and a few hundred bytes,
// no goroutine. The sockets stay the Go runtime's (its own poller has them too); the waiter only
// learns that one became readable, hung up or failed, and runs the watch's fire on a goroutine of
// its own, once.
type waiter struct {
	epfd    int
	wake    [2]int // a pipe whose read end (key 0) ends the loop
	done    chan struct{}
	guard   *guard.Guard
	mu      sync.Mutex
	next    uint64
	watches map[uint64]*watch
	closed  bool
}

type watch struct {
	fd    int
	fire  func()
	timer *time.Timer // the watch's deadline; nil: none
}

func newWaiter(g *guard.Guard) *waiter {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil // parked polls wait on goroutines instead
	}
	w := &waiter{epfd: epfd, guard: g, watches: map[uint64]*watch{}, done: make(chan struct{})}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	if syscall.Pipe2(w.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK) != nil ||
		syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, w.wake[0], &ev) != nil {
		syscall.Close(epfd)
		return nil
	}
	g.Go("parked_poll_waiter", w.loop)
	return w
}

// close ends the loop and waits for it; the watches left fire (their polls read to learn more).
func (w *waiter) close() {
	if w == nil {
		return
	}
	syscall.Write(w.wake[1], []byte{0})
	<-w.done
}

// add watches c's socket: fire runs once, when the socket is readable, hung up or failed, or at
// deadline (zero: none). False when c has no socket of its own to watch (a wrapper that may hold
// read bytes, say): the caller waits its own way.
func (w *waiter) add(c net.Conn, deadline time.Time, fire func()) (key uint64, ok bool) {
	raw := rawSocket(c)
	if w == nil || raw == nil {
		return 0, false
	}
	var fd int
	if raw.Control(func(f uintptr) { fd = int(f) }) != nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, false
	}
	w.next++
	key = w.next
	wt := &watch{fd: fd, fire: fire}
	w.watches[key] = wt
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollOneShot, Fd: int32(key), Pad: int32(key >> 32)}
	if err := syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		delete(w.watches, key)
		return 0, false
	}
	if !deadline.IsZero() {
		wt.timer = time.AfterFunc(time.Until(deadline), w.guard.Func("parked_poll", func() { w.fired(key) }))
	}
	return key, true
}

// epollOneShot is EPOLLONESHOT, which package syscall names with the wrong type.
const epollOneShot = 1 << 30

// remove ends the watch of key before its socket is closed or read elsewhere; true when it was
// still waiting (its fire will not run), false when it has fired or was never added.
func (w *waiter) remove(key uint64) bool {
	if w == nil || key == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.watches[key]
	if !ok {
		return false
	}
	delete(w.watches, key)
	w.forget(wt)
	return true
}

// forget takes a watch's socket off the epoll set; w.mu held. It happens while the socket is
// still open: a closed socket leaves the set by itself, and its number may already be another's.
func (w *waiter) forget(wt *watch) {
	if !w.closed {
		syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, wt.fd, nil)
	}
	if wt.timer != nil {
		wt.timer.Stop()
	}
}

// fired runs the watch of key, unless it was removed or has run.
func (w *waiter) fired(key uint64) {
	w.mu.Lock()
	wt, ok := w.watches[key]
	if ok {
		delete(w.watches, key)
		w.forget(wt)
	}
	w.mu.Unlock()
	if ok {
		w.guard.Go("parked_poll", wt.fire)
	}
}

func (w *waiter) loop() {
	defer close(w.done)
	defer w.end()
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(w.epfd, events, -1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			key := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if key == 0 {
				return
			}
			w.fired(key)
		}
	}
}

// end closes the epoll instance and fires every watch left: each poll then learns its state by
// reading, as it would have on a goroutine of its own.
func (w *waiter) end() {
	w.mu.Lock()
	w.closed = true
	syscall.Close(w.epfd)
	syscall.Close(w.wake[0])
	syscall.Close(w.wake[1])
	keys := make([]uint64, 0, len(w.watches))
	for k := range w.watches {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	for _, k := range keys {
		w.fired(k)
	}
}

// rawSocket is c's TCP socket when nothing in between may hold bytes read from it: the
// connection itself, a TLS connection's (its buffered records are read after the watch), or one
// that says what it wraps (NetConn).
func rawSocket(c net.Conn) syscall.RawConn {
	for {
		switch t := c.(type) {
		case *net.TCPConn:
			raw, err := t.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		case interface{ NetConn() net.Conn }:
			c = t.NetConn()
		default:
			return nil
		}
	}
}
