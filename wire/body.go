package wire

import (
	"bytes"
	"io"
	"sync"
	"unsafe"
)

// MemoryBody is a request body that may be held whole in memory: the inline transport takes such
// a request and writes the body with its head, never waiting on the client.
type MemoryBody interface {
	io.ReadCloser
	// Whole is the body from its start when it is wholly in memory, else nil.
	Whole() *bytes.Reader
}

// JobsRequestPath is the job queue's long poll: a request to it that reached the cell may have
// claimed a job, so it is never sent twice.
const JobsRequestPath = "/api/v4/jobs/request"

// BufferPool hands out buffers of one size; it is an httputil.BufferPool. It pools each
// buffer's first byte's address, not the slice: a pointer goes into a sync.Pool without an
// allocation, a slice header does not.
type BufferPool struct {
	Size int
	pool sync.Pool
}

func (b *BufferPool) Get() []byte {
	if p, ok := b.pool.Get().(*byte); ok {
		return unsafe.Slice(p, b.Size)
	}
	return make([]byte, b.Size)
}

func (b *BufferPool) Put(v []byte) {
	if len(v) == b.Size && cap(v) == b.Size {
		b.pool.Put(unsafe.SliceData(v))
	}
}
