package server

import (
	"bufio"
	"context"
	"io"
	"sync"
	"time"
)

// lineBuffer batches whole log lines into few writes: the access log writes one line per request,
// and a write system call per line cost more than formatting it. Lines reach the output within
// every of flushEvery (and all of them on Flush). A panic flushing ends the flushes on the clock
// (the guard's "background"); lines still go out when the buffer fills and on Flush.
type lineBuffer struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newLineBuffer(out io.Writer) *lineBuffer {
	return &lineBuffer{w: bufio.NewWriterSize(out, 64<<10)}
}

// flushEvery flushes every so often until ctx ends, and once more then.
func (b *lineBuffer) flushEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			b.Flush()
			return
		case <-t.C:
			b.Flush()
		}
	}
}

// Write takes one whole line (the access log and a slog handler write each line in one call).
func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *lineBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.w.Flush()
}
