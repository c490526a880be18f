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

// framed wraps what a yamux session runs over so its frames go out coalesced and batched (see
// frameWriter); a net.Conn stays a net.Conn, so yamux still knows the addresses.
func framed(rwc io.ReadWriteCloser) io.ReadWriteCloser {
	fw := newFrameWriter(rwc)
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
func (c *framedNetConn) Close() error                { return c.fw.close(c.Conn) }

type framedRWC struct {
	io.ReadWriteCloser
	fw *frameWriter
}

func (c *framedRWC) Write(p []byte) (int, error) { return c.fw.Write(p) }
func (c *framedRWC) Close() error                { return c.fw.close(c.ReadWriteCloser) }
