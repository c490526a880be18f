package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"reflect"
	"testing"
)

// answers are cell answers: what GitLab sends a runner, and the framing tricks of response
// splitting and desync.
var answers = []struct {
	raw  string
	head bool
	want Verdict
}{
	{"HTTP/1.1 204 No Content\r\nDate: Sat, 28 Nov 2026 03:00:00 GMT\r\n\r\n", false, Accept},
	{"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"id\":42}", false, Accept},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false, Accept},
	{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, Accept},
	{"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false, Accept},
	{"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n", false, Accept},
	{"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, Accept},
	{"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false, Accept},
	{"HTTP/1.1 200 OK\r\n\r\nread to the end", false, HandOff},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", false, HandOff},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false, HandOff},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", false, HandOff},
	{"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", false, HandOff},
	{"HTTP/1.1 200 OK\nContent-Length: 0\n\n", false, HandOff},
	{"HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n", false, HandOff},
	{"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", false, HandOff},
	{"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n", false, HandOff},
	{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, Accept},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X\r\n\r\n0\r\nX: 1\r\n\r\n", false, HandOff},
}

// TestAnswerSubset: GitLab's answers take the engine's reader; the rest is net/http's.
func TestAnswerSubset(t *testing.T) {
	for _, a := range answers {
		var r Response
		if _, v := ParseResponse([]byte(a.raw), &r, a.head, limits); v != a.want {
			t.Errorf("%q: %s, want %s", a.raw, v, a.want)
		}
	}
}

// FuzzAnswerAgainstNetHTTP: an answer the engine reads, http.ReadResponse (what the transport
// runs) reads too, with the same status, header fields, framing, keep-alive and body.
func FuzzAnswerAgainstNetHTTP(f *testing.F) {
	for _, a := range answers {
		f.Add([]byte(a.raw), a.head)
	}
	f.Fuzz(func(t *testing.T, raw []byte, head bool) {
		var r Response
		n, v := ParseResponse(raw, &r, head, limits)
		if v != Accept {
			return
		}
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("the engine reads %q, net/http refuses it: %v", raw, err)
		}
		chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
		if resp.StatusCode != r.Status || chunked != r.Chunked || resp.Close != r.Close || resp.ProtoMinor != r.Minor {
			t.Fatalf("%q: net/http read %d chunked %v close %v 1.%d; the engine %d chunked %v close %v 1.%d", raw,
				resp.StatusCode, chunked, resp.Close, resp.ProtoMinor, r.Status, r.Chunked, r.Close, r.Minor)
		}
		want := http.Header{}
		for _, h := range r.Headers {
			k := textproto.CanonicalMIMEHeaderKey(string(h.Name))
			if k != "Transfer-Encoding" {
				want[k] = append(want[k], string(h.Value))
			}
		}
		if !reflect.DeepEqual(resp.Header, want) {
			t.Fatalf("%q: net/http's header %v, the engine's %v", raw, resp.Header, want)
		}
		got, gotErr := io.ReadAll(resp.Body)
		var body []byte
		var bodyErr error
		rest := raw[n:]
		switch {
		case r.NoBody:
		case r.Chunked:
			body, bodyErr = io.ReadAll(NewChunkedReader(bufio.NewReader(bytes.NewReader(rest))))
		case r.ContentLength > int64(len(rest)):
			bodyErr = io.ErrUnexpectedEOF
		default:
			body = rest[:r.ContentLength]
		}
		if bodyErr == nil && (gotErr != nil || !bytes.Equal(got, body)) {
			t.Fatalf("%q: the engine read the body %q whole, net/http %q (%v)", raw, body, got, gotErr)
		}
	})
}
