package wire

import (
	"bytes"
	"io"
	"net"
	"strings"
	"time"
)

// newCellTransport is the inline transport edge builds for its cells.
func newCellTransport(dialTimeout, responseHeaderTimeout time.Duration) *InlineTransport {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return NewInlineTransport(NewTransport(dialer, dialTimeout, responseHeaderTimeout))
}

// testBody is a request body, whole in memory or not (a MemoryBody).
type testBody struct {
	io.Reader
	whole *bytes.Reader
}

func (b *testBody) Close() error         { return nil }
func (b *testBody) Whole() *bytes.Reader { return b.whole }

// wholeBody is a body held whole in memory, as the cell router holds a small one.
func wholeBody(s string) *testBody {
	r := bytes.NewReader([]byte(s))
	return &testBody{Reader: r, whole: r}
}

// partBody is a body of which only a part is in memory.
func partBody(s string) *testBody { return &testBody{Reader: strings.NewReader(s)} }
