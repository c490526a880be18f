package integration

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wsUpstream is a workspace app that answers WebSocket upgrades by hand: each upgrade names, in
// headers edge passes on, its case (X-Case), the fault to commit (X-Fault) and how long to hold
// it first (X-Hold, ms). Other requests (a login's last redirect) get 200. Beside what every raw
// upstream keeps, it notes what befell each case's connection.
type wsUpstream struct {
	rawUpstream
	cases map[string]wsCase // guarded by rawUpstream.mu
}

// wsCase is what befell one case's connection at the app.
type wsCase struct {
	ended   bool // it ended from the other side (edge or the agent closed it)
	flooded int  // bytes its flood wrote
}

func newWSUpstream(t *testing.T) *wsUpstream {
	t.Helper()
	u := &wsUpstream{cases: map[string]wsCase{}}
	u.listen(t, u.serve)
	return u
}

func (u *wsUpstream) state(id string) wsCase {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cases[id]
}

func (u *wsUpstream) update(id string, f func(*wsCase)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.cases[id]
	f(&c)
	u.cases[id] = c
}

func (u *wsUpstream) ended(id string) bool { return u.state(id).ended }

func (u *wsUpstream) flooded(id string) int { return u.state(id).flooded }

func (u *wsUpstream) serve(conn net.Conn, br *bufio.Reader, req *http.Request) bool {
	if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		io.Copy(io.Discard, req.Body)
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
		return true
	}
	id := req.Header.Get("X-Case")
	u.note(id)
	if ms, _ := strconv.Atoi(req.Header.Get("X-Hold")); ms > 0 && !u.holdOrAbandon(conn, br, id, time.Duration(ms)*time.Millisecond) {
		return false
	}
	return u.answer(conn, br, req, id)
}

// answer commits the case's fault, or answers the upgrade and echoes; false when the connection
// is done.
func (u *wsUpstream) answer(conn net.Conn, br *bufio.Reader, req *http.Request, id string) bool {
	fault := req.Header.Get("X-Fault")
	if cutHead(conn, fault, "HTTP/1.1 10", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: webs") {
		return false
	}
	head := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		wsAccept(req.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n"
	switch fault {
	case upStall, wsUp101Stall:
		if fault == wsUp101Stall {
			io.WriteString(conn, head)
		}
		io.Copy(io.Discard, br) // until the other side ends the connection
		u.update(id, func(c *wsCase) { c.ended = true })
		return false
	case wsUpRefused:
		body := "refused " + id
		fmt.Fprintf(conn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		return true
	case wsUp101Close:
		io.WriteString(conn, head)
		return false
	case wsUp101Reset:
		conn.Write(append([]byte(head), wsPartialFrame(id)...))
		reset(conn)
		return false
	case wsUpFlood:
		io.WriteString(conn, head)
		frame := append([]byte{0x82, 127, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, bytes.Repeat([]byte{'f'}, 0xffff)...)
		for {
			n, err := conn.Write(frame)
			u.update(id, func(c *wsCase) { c.flooded += n; c.ended = err != nil })
			if err != nil {
				return false
			}
		}
	case wsUp101Frame:
		conn.Write(append([]byte(head), wsFrame([]byte("hello "+id), false)...))
	default:
		io.WriteString(conn, head)
	}
	io.Copy(conn, br) // echo, until the other side ends
	u.update(id, func(c *wsCase) { c.ended = true })
	return false
}

// wsKey is every client's Sec-WebSocket-Key; wsAccept, the Sec-WebSocket-Accept that answers a
// key (RFC 6455, 4.2.2).
const wsKey = "dGhlIHNhbXBsZSBub25jZQ=="

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC11B65"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// wsFrame is one final binary frame of payload (under 126 bytes), masked as a client's are.
func wsFrame(payload []byte, masked bool) []byte {
	if !masked {
		return append([]byte{0x82, byte(len(payload))}, payload...)
	}
	key := []byte{1, 2, 3, 4}
	out := append([]byte{0x82, 0x80 | byte(len(payload))}, key...)
	for i, b := range payload {
		out = append(out, b^key[i%4])
	}
	return out
}

// wsPartialFrame is what an app that cuts a frame short writes after its 101: a frame's header
// for 125 bytes, and 25 of them.
func wsPartialFrame(id string) []byte {
	return append([]byte{0x82, 125}, []byte(fmt.Sprintf("%-25.25s", id))...)
}
