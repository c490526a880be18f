package integration

import (
	"cmp"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The upstream faults of the matrix: what an upstream does instead of (or in the middle of) its
// answer.
const (
	upNone           = "none"             // a whole answer
	upCloseStatus    = "close-status"     // part of the status line, then FIN
	upResetStatus    = "reset-status"     // part of the status line, then RST
	upCloseHeaders   = "close-headers"    // the status line and part of the headers, then FIN
	upResetHeaders   = "reset-headers"    // the same, then RST
	upCloseFirstByte = "close-first-byte" // the head and one byte of the body, then FIN
	upCloseMidBody   = "close-mid-body"   // half the body, then FIN
	upResetMidBody   = "reset-mid-body"   // half the body, then RST
	upCloseLastChunk = "close-last-chunk" // a chunked answer without its last chunk, then FIN
	upStall          = "stall"            // nothing at all, past every timeout
	upStallMidBody   = "stall-mid-body"   // the head and half the body, then nothing
	upExtraBytes     = "extra-bytes"      // a whole answer, then bytes nobody asked for
	upInterimClose   = "interim-close"    // a 103, then FIN
)

var upstreamFaults = []string{upNone, upCloseStatus, upResetStatus, upCloseHeaders, upResetHeaders,
	upCloseFirstByte, upCloseMidBody, upResetMidBody, upCloseLastChunk, upStall, upStallMidBody,
	upExtraBytes, upInterimClose}

// faultPlan is what a fault upstream does with one request: the case it counts the request
// under, the fault it commits (upstreamFaults), how long it holds the request first, and the
// answer it writes whole or cuts short.
type faultPlan struct {
	id      string
	fault   string
	hold    time.Duration
	status  string // the status line's code and reason; "" is "200 OK"
	header  string // more header lines, each ending in CRLF
	body    string // at least two bytes: the faults cut it
	chunked bool
	// events make the answer a stream (a watch): each event its own chunk, and the stream stays
	// open after them until the connection ends, unless the fault ends it.
	events []string
}

// writeAnswer writes p's answer, or commits its fault instead of (or in the middle of) it; false
// when the connection is done.
func writeAnswer(conn net.Conn, p faultPlan) bool {
	status := cmp.Or(p.status, "200 OK")
	if cutHead(conn, p.fault, "HTTP/1.1 2", "HTTP/1.1 "+status+"\r\nContent-Type: appl") {
		return false
	}
	stream := p.events != nil
	body, pieces := p.body, p.events
	if stream {
		body = strings.Join(p.events, "")
	}
	chunked := p.chunked || stream
	if !stream {
		half := len(body) / 2
		pieces = []string{body[:half], body[half:]}
	}
	top := "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + p.header
	head := top + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if chunked {
		head = top + "Transfer-Encoding: chunked\r\n\r\n"
	}
	var chunks strings.Builder
	for _, s := range pieces {
		chunks.WriteString(chunk(s))
	}
	whole := head + body
	if chunked {
		whole = head + chunks.String() + "0\r\n\r\n"
	}
	half := body[:len(body)/2]
	cut := func(s string) string { return head + firstPart(s, chunked) }
	switch p.fault {
	case upCloseFirstByte:
		io.WriteString(conn, cut(body[:1]))
		return false
	case upCloseMidBody:
		io.WriteString(conn, cut(half))
		return false
	case upResetMidBody:
		io.WriteString(conn, cut(half))
		reset(conn)
		return false
	case upCloseLastChunk:
		io.WriteString(conn, top+"Transfer-Encoding: chunked\r\n\r\n"+chunks.String())
		return false
	case upStall:
		io.Copy(io.Discard, conn) // until edge gives up and closes, or the test ends
		return false
	case upStallMidBody:
		io.WriteString(conn, cut(half))
		io.Copy(io.Discard, conn)
		return false
	case upExtraBytes:
		io.WriteString(conn, whole+"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"case\":\"evil\"}")
		return true
	}
	if stream {
		io.WriteString(conn, head+chunks.String())
		io.Copy(io.Discard, conn) // a watch stays open until edge ends it
		return false
	}
	io.WriteString(conn, whole)
	return true
}

// cutHead commits a fault that ends the answer before its head: part of the status line
// (statusPart), or the status line and part of the headers (headersPart), then FIN or RST; or a
// 103, then FIN. It says whether fault was one of those, the connection then done.
func cutHead(conn net.Conn, fault, statusPart, headersPart string) bool {
	switch fault {
	case upCloseStatus, upResetStatus:
		io.WriteString(conn, statusPart)
	case upCloseHeaders, upResetHeaders:
		io.WriteString(conn, headersPart)
	case upInterimClose:
		io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
	default:
		return false
	}
	if fault == upResetStatus || fault == upResetHeaders {
		reset(conn)
	}
	return true
}

func chunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

func firstPart(s string, chunked bool) string {
	if chunked {
		return chunk(s)
	}
	return s
}
