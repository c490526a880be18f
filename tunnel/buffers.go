package tunnel

import (
	"io"
	"net"
	"sync"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// CopyBufferSize is the size of the buffers the reverse proxies on either end of a tunnel move
// bodies with. Every write to a yamux stream becomes one frame, and each frame is a hand-off to
// the session's send loop, so large copies make few, large frames. A proxy takes one for every
// answer, however small, so it stays below the bulk size.
const CopyBufferSize = 256 << 10

// bulkBufferSize is what a copy that has filled its small buffer moves on with (pipe, and a
// request body written to a stream): a window's worth, so a 10 MiB transfer is ten frames and
// about as many system calls at each end. On this project's 2-CPU machine, a chain of two Go
// TCP relays on one CPU moved 13% more with 1 MiB copies than with 256 KiB; through a tunnel,
// uploads went from 430-511 to 555-787 MB/s once request bodies took bulk frames instead of
// 32 KiB ones, and downloads stayed within the noise.
const bulkBufferSize = DefaultStreamWindow

// BufferPool is an httputil.BufferPool of CopyBufferSize buffers, for the reverse proxies on
// either end of a tunnel, and the pool of bulk buffers of the copies the tunnel makes itself.
// Pooling array pointers keeps Put from allocating.
type BufferPool struct{ pool, bulk sync.Pool }

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

func (b *BufferPool) getBulk() *[bulkBufferSize]byte {
	if v, ok := b.bulk.Get().(*[bulkBufferSize]byte); ok {
		return v
	}
	return new([bulkBufferSize]byte)
}

func (b *BufferPool) putBulk(v *[bulkBufferSize]byte) { b.bulk.Put(v) }

// pipe copies src to dst until src ends or a write fails, and returns how many bytes it wrote.
// It reads into a small buffer and takes a bulk one from pool while reads fill it (a body
// streaming), giving it back at the first short read: an idle stream holds 16 KiB per direction,
// and a transfer still moves large frames.
func pipe(dst io.Writer, src io.Reader, pool *BufferPool) (int64, error) {
	return pipeStalling(dst, src, pool, WriteStall)
}

// WriteStall bounds how long one write of a relay or a body copied onto a stream may wait for
// its reader: a peer that stops reading (a client that never reads its answer, an agent whose
// stream is stuck) is cut after it instead of holding both ends. nginx's send_timeout (60 s by
// default) is the model: a bound between two writes, not on a whole transfer.
const WriteStall = 60 * time.Second

// pipeStalling is pipe with the write bound given.
func pipeStalling(dst io.Writer, src io.Reader, pool *BufferPool, stall time.Duration) (int64, error) {
	dl, _ := dst.(interface{ SetWriteDeadline(time.Time) error })
	if dl != nil {
		defer dl.SetWriteDeadline(time.Time{}) // a kept stream's next user starts without one
	}
	var small [spliceSmallBuffer]byte
	buf := small[:]
	var big *[bulkBufferSize]byte
	defer func() {
		if big != nil {
			pool.putBulk(big)
		}
	}()
	var written int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if dl != nil {
				dl.SetWriteDeadline(time.Now().Add(stall))
			}
			m, werr := dst.Write(buf[:n])
			written += int64(m)
			if werr != nil {
				return written, werr
			}
		}
		if err != nil {
			if err == io.EOF {
				return written, nil
			}
			return written, err
		}
		switch {
		case big == nil && n == len(buf):
			big = pool.getBulk()
			buf = big[:]
		case big != nil && n < len(small):
			pool.putBulk(big)
			big, buf = nil, small[:]
		}
	}
}

// bulkWriter is a stream (or a connection relayed onto one) that copies what is written to it
// from a reader in bulk frames: http.Transport writes a request body through io.Copy to its
// connection, which would otherwise move it 32 KiB, one frame, at a time.
type bulkWriter struct {
	net.Conn
	pool *BufferPool
}

func (c *bulkWriter) ReadFrom(r io.Reader) (int64, error) { return pipe(c.Conn, r, c.pool) }

// framed wraps what a yamux session runs over so its frames go out coalesced and batched (see
// frameWriter); a net.Conn stays a net.Conn, so yamux still knows the addresses.
func framed(rwc io.ReadWriteCloser, g *guard.Guard) io.ReadWriteCloser {
	fw := newFrameWriter(rwc)
	fw.guard = g
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
