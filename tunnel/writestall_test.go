package tunnel

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// A relay whose reader stops reading is cut after the write bound, and the bound is gone once the
// copy ends (a kept stream's next writer must not inherit it).
func TestPipeCutsAReaderThatStopsReading(t *testing.T) {
	reader, writer := net.Pipe() // synchronous: a write waits for a read
	defer reader.Close()
	defer writer.Close()
	src := strings.NewReader("bytes nobody reads")
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := pipeStalling(writer, src, &BufferPool{}, 100*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("pipe ended with %v, want the write deadline", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("cut after %v, before the 100 ms bound", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a reader that never reads held the relay 5 s past a 100 ms bound")
	}
	// The deadline was cleared: a write read at once succeeds.
	go func() { b := make([]byte, 4); reader.Read(b) }()
	if _, err := writer.Write([]byte("next")); err != nil {
		t.Errorf("a write after the copy: %v, want no deadline left", err)
	}
}
