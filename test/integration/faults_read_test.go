package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// clientResult is what a client read by hand of one answer.
type clientResult struct {
	status   int // 0: no answer at all
	interims int // 1xx answers before it, 101 aside
	header   http.Header
	body     string // what was read of the body (none for a 101)
	bodyErr  error  // nil when the body was read whole
	closed   bool   // the connection ended after it (or instead of it)
}

func (r clientResult) String() string {
	return fmt.Sprintf("status %d after %d interim answers, body %q (%v), closed %v", r.status, r.interims, r.body, r.bodyErr, r.closed)
}

// readAnswer reads one answer (after its 1xx) from br within patience. A 101 is an answer: the
// stream's bytes after it stay in br.
func readAnswer(conn net.Conn, br *bufio.Reader, patience time.Duration) clientResult {
	conn.SetReadDeadline(time.Now().Add(patience))
	defer conn.SetReadDeadline(time.Time{})
	var r clientResult
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			r.closed = !isTimeoutErr(err)
			return r
		}
		if resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			r.interims++
			continue
		}
		r.status, r.header = resp.StatusCode, resp.Header
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return r
		}
		b, err := io.ReadAll(resp.Body)
		r.body, r.bodyErr = string(b), err
		if err != nil {
			r.closed = !isTimeoutErr(err)
		} else if resp.Close {
			r.closed = true
		}
		return r
	}
}

// readToEnd reads what comes within patience: ended when the stream ended (FIN or RST) rather
// than patience passing.
func readToEnd(conn net.Conn, br *bufio.Reader, patience time.Duration) ([]byte, bool) {
	got, err := readWithin(conn, br, patience)
	return got, err == nil || !isTimeoutErr(err)
}

// endsWithoutAnswer reads until the connection ends within patience: true when it ended with a
// FIN and no byte came (the right end for a client that gave up on its request).
func endsWithoutAnswer(conn net.Conn, patience time.Duration) (bool, string) {
	got, err := readWithin(conn, conn, patience)
	return err == nil && len(got) == 0, string(got)
}

// readWithin reads r, conn's stream, until it ends or patience passes.
func readWithin(conn net.Conn, r io.Reader, patience time.Duration) ([]byte, error) {
	conn.SetReadDeadline(time.Now().Add(patience))
	defer conn.SetReadDeadline(time.Time{})
	return io.ReadAll(r)
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
