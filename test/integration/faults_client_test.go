package integration

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// The client faults of the matrix: what a client does instead of waiting for its answer.
const (
	cliNone             = "none"
	cliResetSendingBody = "reset-sending-body" // Content-Length promised, part of the body, then RST
	cliHalfCloseHeld    = "half-close-held"    // the request, then FIN while the cell holds it
	cliResetHeld        = "reset-held"         // the request, then RST while the cell holds it
	cliStopReading      = "stop-reading"       // a big answer the client does not read, then RST
	cliPipelined        = "pipelined"          // a second request behind the first, held one
)

var clientFaults = []string{cliResetSendingBody, cliHalfCloseHeld, cliResetHeld, cliStopReading, cliPipelined}

// faultPath is one way bytes cross edge to an upstream (a cell, an agent's port), as the matrix
// drives it by hand.
type faultPath struct {
	name   string
	method string
	target string
	header string // more header lines, each ending in CRLF (a route's credentials)
	body   string
	hold   int    // ms the cell holds every request of the path before its answer
	answer string // the answer's form: "" (Content-Length) or "chunked"
	once   bool   // a body or a job claim: never sent twice, whatever the fault
}

// faultRequest is one request of a case, written by hand.
type faultRequest struct {
	id, fault, answer string
	hold              int
}

func (p faultPath) bytes(r faultRequest, declared int, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: edge.test\r\nUser-Agent: gitlab-runner 17.11.0 (faults)\r\n", p.method, p.target)
	fmt.Fprintf(&b, "X-Case: %s\r\nX-Request-Id: %s\r\nX-Fault: %s\r\nX-Hold: %d\r\n", r.id, r.id, r.fault, r.hold)
	b.WriteString(p.header)
	if r.answer != "" {
		fmt.Fprintf(&b, "X-Answer: %s\r\n", r.answer)
	}
	if p.method == http.MethodPost {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", declared)
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.String()
}

// reset ends conn with an RST.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func holdOf(p faultPath, atLeast int) int { return max(p.hold, atLeast) }

func itoa(n int) string { return strconv.Itoa(n) }
