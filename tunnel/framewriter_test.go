package tunnel

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// recordingWriter keeps what is written and how many writes it took; block holds writes.
type recordingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	block  chan struct{}
	err    error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	r.writes++
	return r.buf.Write(p)
}

func (r *recordingWriter) Close() error { return nil }

func (r *recordingWriter) snapshot() ([]byte, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes()), r.writes
}

func dataHeader(stream byte, n int) []byte {
	return []byte{0, yamuxTypeData, 0, 0, 0, 0, 0, stream, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}

// Frames go out in the order yamux wrote them, headers joined to their bodies, small and large
// ones mixed; frames queued while a write is under way go out together.
func TestFrameWriterOrderAndBatching(t *testing.T) {
	w := &recordingWriter{block: make(chan struct{})}
	f := newFrameWriter(w)
	var want bytes.Buffer
	write := func(p []byte) {
		t.Helper()
		want.Write(p)
		if n, err := f.Write(p); err != nil || n != len(p) {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	// The first frame starts the flusher, whose write is held: the next ones queue behind it.
	write(dataHeader(1, 5))
	write([]byte("hello"))
	for i := range 10 {
		write(dataHeader(byte(i), 3))
		write([]byte{'a', 'b', byte('0' + i)})
		write(dataHeader(0, 0)[:yamuxHeaderSize]) // a frame without body (a window update, say)
	}
	close(w.block)
	large := bytes.Repeat([]byte{7}, coalesceLimit+1)
	write(dataHeader(3, len(large)))
	write(large) // written by the caller, after the queue
	write(dataHeader(4, 2))
	write([]byte("ok"))
	if err := f.close(w); err != nil {
		t.Fatal(err)
	}
	got, writes := w.snapshot()
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("written: %d bytes, want %d in order", len(got), want.Len())
	}
	if writes > 5 {
		t.Errorf("writes: got %d, want the held frame, the queue behind it, the large frame's, the last one's (<= 5)", writes)
	}
	if _, err := f.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after close: got %v, want net.ErrClosed", err)
	}
}

// close gives up on a writer that does not take the queue within closeFlushTimeout.
func TestFrameWriterCloseBounded(t *testing.T) {
	w := &recordingWriter{block: make(chan struct{})}
	defer close(w.block)
	f := newFrameWriter(w)
	f.Write(dataHeader(1, 1))
	f.Write([]byte("x"))
	start := time.Now()
	f.close(w)
	if d := time.Since(start); d < closeFlushTimeout/2 || d > 5*closeFlushTimeout {
		t.Errorf("close with a stuck writer took %v, want about %v", d, closeFlushTimeout)
	}
}

// A failed write fails every later Write, as yamux needs to end the session.
func TestFrameWriterError(t *testing.T) {
	w := &recordingWriter{err: io.ErrClosedPipe}
	f := newFrameWriter(w)
	f.Write(dataHeader(1, 1))
	f.Write([]byte("x"))
	poll.Until(t, 10*time.Second, "a Write to return the failure", func() bool {
		_, err := f.Write([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
		return errors.Is(err, io.ErrClosedPipe)
	})
}
