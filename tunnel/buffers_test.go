package tunnel

import (
	"bytes"
	"io"
	"net"
	"slices"
	"testing"
	"testing/iotest"
	"time"
)

// writeSizes is a connection that keeps what is written to it and the size of each write.
type writeSizes struct {
	net.Conn
	got   bytes.Buffer
	sizes []int
}

func (w *writeSizes) SetWriteDeadline(time.Time) error { return nil }

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.got.Write(p)
}

func TestBulkWriterMovesAStreamingBodyInBulk(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16)
	conn := &writeSizes{}
	var pool BufferPool
	// What http.Transport does with a request body: io.Copy to its connection.
	n, err := io.Copy(&bulkWriter{Conn: conn, pool: &pool}, io.LimitReader(bytes.NewReader(body), int64(len(body))))
	if err != nil || n != int64(len(body)) {
		t.Fatalf("copied %d, %v; want %d", n, err, len(body))
	}
	if !bytes.Equal(conn.got.Bytes(), body) {
		t.Fatal("the body arrived changed")
	}
	want := []int{spliceSmallBuffer}
	for left := len(body) - spliceSmallBuffer; left > 0; left -= bulkBufferSize {
		want = append(want, min(left, bulkBufferSize))
	}
	if !slices.Equal(conn.sizes, want) {
		t.Fatalf("writes %v, want %v: one small, then bulk frames", conn.sizes, want)
	}
}

// offers records the size of the buffer each Read is given.
type offers struct {
	r     io.Reader
	sizes []int
}

func (o *offers) Read(p []byte) (int, error) {
	o.sizes = append(o.sizes, len(p))
	return o.r.Read(p)
}

func TestPipeTakesABulkBufferOnlyWhileReadsFillIt(t *testing.T) {
	var pool BufferPool
	// A body that trickles (a client typing) never fills the small buffer.
	trickle := &offers{r: iotest.OneByteReader(bytes.NewReader(make([]byte, 3)))}
	if _, err := pipe(&writeSizes{}, trickle, &pool); err != nil {
		t.Fatal(err)
	}
	if want := []int{spliceSmallBuffer, spliceSmallBuffer, spliceSmallBuffer, spliceSmallBuffer}; !slices.Equal(trickle.sizes, want) {
		t.Fatalf("reads offered %v, want %v", trickle.sizes, want)
	}
	// A full read takes a bulk buffer; the first short one gives it back.
	burst := &offers{r: io.MultiReader(bytes.NewReader(make([]byte, spliceSmallBuffer)), bytes.NewReader(make([]byte, 64)),
		bytes.NewReader(make([]byte, 10)))}
	if _, err := pipe(&writeSizes{}, burst, &pool); err != nil {
		t.Fatal(err)
	}
	if want := []int{spliceSmallBuffer, bulkBufferSize, spliceSmallBuffer, spliceSmallBuffer}; !slices.Equal(burst.sizes, want) {
		t.Fatalf("reads offered %v, want %v", burst.sizes, want)
	}
}
