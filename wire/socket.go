package wire

import (
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"

	"gitlab.com/edge/edge/hop"
)

// plainSocket is the connection's socket when it is a plain TCP connection whose readiness can
// be peeked at: one whose readiness to read is the answer's (nothing like TLS buffers bytes in
// between). Only there are polls parked.
func (c *inlineConn) plainSocket() (syscall.RawConn, bool) {
	if _, ok := c.Conn.(*net.TCPConn); !ok || !canPeek {
		return nil, false
	}
	return c.rawConn()
}

// socket says whether the connection is a socket whose readiness can be peeked at.
func (c *inlineConn) socket() bool {
	_, ok := c.Conn.(syscall.Conn)
	return ok && canPeek
}

// sendAndAwait writes a request on the socket raw (out, encoded, or req) and waits, reading
// nothing, until the answer begins, the connection ends or the read deadline passes. The wait is
// armed before the request goes out, so no read has to find the answer missing first: a read
// that finds nothing, then one that finds it, cost two system calls per request. sent tells
// whether the request went out.
func (c *inlineConn) sendAndAwait(raw syscall.RawConn, out []byte, req *http.Request) (sent bool, err error) {
	a := &c.await
	if a.step == nil {
		a.c, a.step = c, c.sendStep // bound once: a closure per request would be an allocation
	}
	a.out, a.req, a.sent, a.err = out, req, false, nil
	err = raw.Read(a.step)
	if !a.sent && a.err == nil && hop.IsTimeout(err) {
		// The deadline passed before the poller ran the step (a busy machine): it reports the
		// timeout without sending. The request goes out now, and the wait is what timed out.
		a.err = a.send()
		a.sent = a.err == nil
	}
	sent, sendErr := a.sent, a.err
	a.out, a.req = nil, nil
	if sendErr != nil {
		return false, sendErr
	}
	return sent, err
}

// awaiting is sendAndAwait's state, kept by the connection.
type awaiting struct {
	c    *inlineConn
	out  []byte
	req  *http.Request
	sent bool
	err  error
	step func(uintptr) bool
}

func (c *inlineConn) sendStep(uintptr) bool {
	a := &c.await
	if a.sent {
		return true // called again: the poller says the answer began (readHead copes when it lied)
	}
	// The poller's readiness was reset just before this call: an answer arriving from now on ends
	// the wait that follows.
	a.err = a.send()
	a.sent = a.err == nil
	return !a.sent
}

// awaitReadable waits until the socket has a byte to read or has ended, reading nothing.
func (c *inlineConn) awaitReadable() error {
	raw, ok := c.rawConn()
	if !ok {
		return errors.New("wire: not a socket")
	}
	return peekReadable(raw)
}

// alive says whether an idle connection is still open and quiet: a peer that closed it, or sent
// bytes nobody asked for, must not get the next request. A socket gets one non-blocking peek; a
// stream of a multiplexed connection (yamux) is read with a deadline already past, which reports
// what the stream already knows (closed, data waiting) without waiting.
func (c *inlineConn) alive() bool {
	if _, ok := c.Conn.(syscall.Conn); ok && canPeek {
		raw, ok := c.rawConn()
		return ok && c.probe.quiet(raw)
	}
	if c.SetReadDeadline(time.Unix(1, 0)) != nil {
		return false
	}
	_, err := c.reader().Peek(1)
	return hop.IsTimeout(err) && c.SetReadDeadline(time.Time{}) == nil
}

// rawConn is the connection's socket, asked of it once.
func (c *inlineConn) rawConn() (syscall.RawConn, bool) {
	if c.raw == nil {
		sc, ok := c.Conn.(syscall.Conn)
		if !ok {
			return nil, false
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return nil, false
		}
		c.raw = raw
	}
	return c.raw, true
}

func (a *awaiting) send() error {
	if a.req != nil {
		return a.c.send(a.req)
	}
	return a.c.write(a.out)
}
