package h1

import (
	"bytes"
	"reflect"
	"testing"
)

// smuggling are request heads and bodies after the published request smuggling techniques:
// CL.TE and TE.CL, Transfer-Encoding obfuscations, duplicate and malformed lengths, obsolete line
// folding, bare LF and CR, absolute-form and odd targets, the h2c upgrade and HTTP/2's preface,
// plus the plain requests a runner sends.
var smuggling = []struct {
	raw  string
	want Verdict
}{
	{"GET /api/v4/runners/router/discovery HTTP/1.1\r\nHost: edge\r\nRunner-Token: glrt-x\r\n\r\n", Accept},
	{"POST /api/v4/jobs/request HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"token\":\"t1\"}", Accept},
	{"PATCH /api/v4/jobs/1/trace HTTP/1.1\r\nHost: edge\r\nJob-Token: x\r\nContent-Range: 0-3\r\nContent-Length: 4\r\n\r\nabcd", Accept},
	{"PUT /api/v4/jobs/1 HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Accept},
	{"POST /x HTTP/1.1\r\nHost: edge\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc", Accept},
	{"GET / HTTP/1.0\r\nHost: edge\r\nConnection: keep-alive\r\n\r\n", Accept},
	{"GET / HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n", Accept},
	// pipelined: where the next request starts
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 4\r\n\r\nabcdGET /x HTTP/1.1\r\nHost: edge\r\n\r\n", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /y HTTP/1.1\r\nHost: edge\r\n\r\n", Accept},
	{"GET / HTTP/1.1\r\nHost: edge\r\n\r\nGET /2 HTTP/1.1\r\nHost: edge\r\nContent-Length: 5\r\n\r\nhello", Accept},
	{"GET / HTTP/1.1\r\nHost: edge\r\nContent-Length: 0\r\n\r\nGET /2 HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", Accept},
	// CL.TE and TE.CL
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nSMUGGLED", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", HandOff},
	// Transfer-Encoding obfuscations
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\nTransfer-encoding: x\r\n\r\n0\r\n\r\n", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer_Encoding: chunked\r\n\r\n0\r\n\r\n", Accept},
	{"POST / HTTP/1.0\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", HandOff},
	// lengths
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: +3\r\n\r\nabc", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 0x3\r\n\r\nabc", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 3 4\r\n\r\nabc", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 003\r\n\r\nabc", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 99999999999999999999\r\n\r\nabc", HandOff},
	{"POST / HTTP/1.1\r\nHost: edge\r\nContent-Length: 10\r\n\r\nabc", Accept},
	// chunk sizes and trailers
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n\r\n", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\nx\r\n0\r\n\r\n", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", Accept},
	{"POST / HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", Accept},
	// lines, whitespace and folding
	{"GET / HTTP/1.1\nHost: edge\n\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nX: a\rb\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nX: a\r\n b\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\n Host: edge\r\n\r\n", HandOff},
	{"GET  / HTTP/1.1\r\nHost: edge\r\n\r\n", HandOff},
	{"GET / HTTP/1.1 \r\nHost: edge\r\n\r\n", HandOff},
	{"GET\t/ HTTP/1.1\r\nHost: edge\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nX-A\x00: b\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nX: \x7f\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nX: caf\xc3\xa9\r\n\r\n", HandOff},
	// hosts
	{"GET / HTTP/1.1\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", Accept},
	{"GET / HTTP/1.0\r\n\r\n", HandOff},
	// targets
	{"GET http://cell/api/v4/jobs/request HTTP/1.1\r\nHost: edge\r\n\r\n", HandOff},
	{"GET * HTTP/1.1\r\nHost: edge\r\n\r\n", HandOff},
	{"CONNECT edge:443 HTTP/1.1\r\nHost: edge\r\n\r\n", HandOff},
	{"GET /a%zz HTTP/1.1\r\nHost: edge\r\n\r\n", HandOff},
	{"GET /a%2f HTTP/1.1\r\nHost: edge\r\n\r\n", Accept},
	{"GET /a#b HTTP/1.1\r\nHost: edge\r\n\r\n", HandOff},
	{"GET /api/v4/jobs/../runners HTTP/1.1\r\nHost: edge\r\n\r\n", Accept},
	// versions, upgrades, HTTP/2
	{"GET / HTTP/1.2\r\nHost: edge\r\n\r\n", HandOff},
	{"GET / HTTP/2.0\r\nHost: edge\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", HandOff},
	{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", HandOff},
	{"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nExpect: 101-continue\r\n\r\n", HandOff},
	{"GET / HTTP/1.1\r\nHost: edge\r\nConnection: keep-alive, X-Foo\r\nX-Foo: 1\r\n\r\n", HandOff},
}

// TestSubset: the requests a runner sends take the engine; every smuggling technique, and
// whatever else net/http reads its own way, is handed off (or needs more bytes).
func TestSubset(t *testing.T) {
	for _, s := range smuggling {
		var r Request
		if _, v := Parse([]byte(s.raw), &r, limits); v != s.want {
			t.Errorf("%q: %s, want %s", s.raw, v, s.want)
		}
	}
}

// limits are small, so that the fuzzer reaches them.
var limits = Limits{MaxHead: 2048, MaxHeaders: 20}

// FuzzAgainstNetHTTP: whatever the bytes a client sends on a connection, each request the engine
// accepts is one net/http's server accepts too, with the same method, target, host, header fields,
// framing, keep-alive and body, and the next request starts where net/http's does (no request
// hides in another's body). What the engine hands off is net/http's to answer from there, so there
// is nothing to compare.
func FuzzAgainstNetHTTP(f *testing.F) {
	for _, s := range smuggling {
		f.Add([]byte(s.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		engine := engineReads(raw, limits)
		if len(engine) == 0 {
			return
		}
		nethttp := netHTTP(raw, limits.MaxHead)
		for i, want := range engine {
			if i >= len(nethttp) {
				t.Fatalf("%q: the engine accepts request %d (%s %s), net/http refuses it", raw, i+1, want.method, want.target)
			}
			sameReading(t, raw, i, nethttp[i], want)
		}
	})
}

// sameReading fails unless net/http read request i of raw as the engine did: its method, target,
// host, header fields, framing and keep-alive, and, where the engine read the body whole, the
// same body.
func sameReading(t *testing.T, raw []byte, i int, got, want reading) {
	t.Helper()
	if got.method != want.method || got.target != want.target || got.host != want.host || got.chunked != want.chunked || got.close != want.close {
		t.Fatalf("%q request %d: net/http read %s %s host %q chunked %v close %v; the engine %s %s host %q chunked %v close %v", raw, i+1,
			got.method, got.target, got.host, got.chunked, got.close, want.method, want.target, want.host, want.chunked, want.close)
	}
	if !reflect.DeepEqual(got.header, want.header) {
		t.Fatalf("%q request %d: net/http's header %v, the engine's %v", raw, i+1, got.header, want.header)
	}
	if want.bodyErr == nil && (got.bodyErr != nil || !bytes.Equal(got.body, want.body)) {
		t.Fatalf("%q request %d: the engine read the body %q whole, net/http %q (%v)", raw, i+1, want.body, got.body, got.bodyErr)
	}
}
