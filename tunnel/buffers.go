package tunnel

import (
	"io"
	"net"
	"sync"
)

// CopyBufferSize is the size of the buffers that move bodies through a tunnel. Every write to a
// yamux stream becomes one frame, and each frame is a hand-off to the session's send loop, so
// large copies make few, large frames.
const CopyBufferSize = 256 << 10

// BufferPool is an httputil.BufferPool of CopyBufferSize buffers, for the reverse proxies on
// either end of a tunnel. Pooling array pointers keeps Put from allocating.
type BufferPool struct{ pool sync.Pool }

func (b *BufferPool) Get() []byte {
	if v, ok := b.pool.Get().(*[CopyBufferSize]byte); ok {
		return v[:]
	}
	return new([CopyBufferSize]byte)[:]
}

func (b *BufferPool) Put(v []byte) {
	if len(v) == CopyBufferSize {
		b.pool.Put((*[CopyBufferSize]byte)(v))
	}
}

// yamuxHeaderSize and typeData follow yamux's frame header: version, type, flags (2), stream id
// (4), length (4).
const (
	yamuxHeaderSize = 12
	yamuxTypeData   = 0
	coalesceLimit   = 16 << 10
)

// frameWriter sends a yamux data frame's header together with a small body. yamux's send loop
// writes the two separately, which costs a second syscall and, on a small request, a second
// packet. Only the session's send loop writes, so no lock is needed.
type frameWriter struct {
	w       io.Writer
	hdr     [yamuxHeaderSize]byte
	held    bool
	scratch []byte
}

func (f *frameWriter) Write(p []byte) (int, error) {
	if f.held {
		f.held = false
		if len(p) <= coalesceLimit {
			f.scratch = append(append(f.scratch[:0], f.hdr[:]...), p...)
			n, err := f.w.Write(f.scratch)
			return max(n-yamuxHeaderSize, 0), err
		}
		if _, err := f.w.Write(f.hdr[:]); err != nil {
			return 0, err
		}
		return f.w.Write(p)
	}
	if len(p) == yamuxHeaderSize && p[1] == yamuxTypeData && (p[8]|p[9]|p[10]|p[11]) != 0 {
		// A data frame's body follows in the next Write; p is yamux's buffer, reused later.
		copy(f.hdr[:], p)
		f.held = true
		return len(p), nil
	}
	return f.w.Write(p)
}

// framed wraps what a yamux session runs over so its frames go out coalesced; a net.Conn stays
// a net.Conn, so yamux still knows the addresses.
func framed(rwc io.ReadWriteCloser) io.ReadWriteCloser {
	fw := &frameWriter{w: rwc, scratch: make([]byte, 0, yamuxHeaderSize+coalesceLimit)}
	if c, ok := rwc.(net.Conn); ok {
		return &framedNetConn{Conn: c, fw: fw}
	}
	return &framedRWC{ReadWriteCloser: rwc, fw: fw}
}

type framedNetConn struct {
	net.Conn
	fw *frameWriter
}

func (c *framedNetConn) Write(p []byte) (int, error) { return c.fw.Write(p) }

type framedRWC struct {
	io.ReadWriteCloser
	fw *frameWriter
}

func (c *framedRWC) Write(p []byte) (int, error) { return c.fw.Write(p) }
