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
	"sync"
	"testing"
	"time"
)

// wsUpstream is a workspace app that answers WebSocket upgrades by hand: each upgrade names, in
// headers edge passes on, its case (X-Case), the fault to commit (X-Fault) and how long to hold
// it first (X-Hold, ms). Other requests (a login's last redirect) get 200. It keeps what befell
// each case, and its connections, to close them between cases.
type wsUpstream struct {
	ln    net.Listener
	mu    sync.Mutex
	cases map[string]wsCase
	conns map[net.Conn]bool // true in the middle of an upgrade, a WebSocket or a request
}

// wsCase is what befell one case at the app.
type wsCase struct {
	seen    int  // upgrades
	ended   bool // its connection ended from the other side (edge or the agent closed it)
	gone    bool // ... while the app held the upgrade
	flooded int  // bytes its flood wrote
}

func newWSUpstream(t *testing.T) *wsUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &wsUpstream{ln: ln, cases: map[string]wsCase{}, conns: map[net.Conn]bool{}}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns[conn] = false
			u.mu.Unlock()
			go u.serve(conn)
		}
	}()
	t.Cleanup(func() { ln.Close(); u.closeConns() })
	return u
}

func (u *wsUpstream) port() int { return u.ln.Addr().(*net.TCPAddr).Port }

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

func (u *wsUpstream) count(id string) int { return u.state(id).seen }

func (u *wsUpstream) ended(id string) bool { return u.state(id).ended }

func (u *wsUpstream) abandoned(id string) bool { return u.state(id).gone }

func (u *wsUpstream) flooded(id string) int { return u.state(id).flooded }

// busy counts the connections in the middle of an upgrade, a WebSocket or a request.
func (u *wsUpstream) busy() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, b := range u.conns {
		if b {
			n++
		}
	}
	return n
}

func (u *wsUpstream) setBusy(conn net.Conn, busy bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.conns[conn]; ok {
		u.conns[conn] = busy
	}
}

// closeConns ends every connection to the app, so that a case starts on new ones.
func (u *wsUpstream) closeConns() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for conn := range u.conns {
		conn.Close()
		delete(u.conns, conn)
	}
}

func (u *wsUpstream) serve(conn net.Conn) {
	defer func() {
		conn.Close()
		u.mu.Lock()
		delete(u.conns, conn)
		u.mu.Unlock()
	}()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		u.setBusy(conn, true)
		if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
			io.Copy(io.Discard, req.Body)
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
			u.setBusy(conn, false)
			continue
		}
		id := req.Header.Get("X-Case")
		u.update(id, func(c *wsCase) { c.seen++ })
		if ms, _ := strconv.Atoi(req.Header.Get("X-Hold")); ms > 0 && !u.hold(conn, br, id, time.Duration(ms)*time.Millisecond) {
			return
		}
		if !u.answer(conn, br, req, id) {
			return
		}
		u.setBusy(conn, false)
	}
}

// hold waits d before the answer: false when the other side closed the connection first.
func (u *wsUpstream) hold(conn net.Conn, br *bufio.Reader, id string, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := br.Peek(1)
	conn.SetReadDeadline(time.Time{})
	if err != nil && !isTimeoutErr(err) {
		u.update(id, func(c *wsCase) { c.gone = true })
		return false
	}
	return true
}

// answer commits the case's fault, or answers the upgrade and echoes; false when the connection
// is done.
func (u *wsUpstream) answer(conn net.Conn, br *bufio.Reader, req *http.Request, id string) bool {
	head := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		wsAccept(req.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n"
	rst := func() { conn.(*net.TCPConn).SetLinger(0) }
	// drain reads until the other side ends the connection.
	drain := func() {
		io.Copy(io.Discard, br)
		u.update(id, func(c *wsCase) { c.ended = true })
	}
	switch req.Header.Get("X-Fault") {
	case wsUpCloseStatus:
		io.WriteString(conn, "HTTP/1.1 10")
		return false
	case wsUpResetStatus:
		io.WriteString(conn, "HTTP/1.1 10")
		rst()
		return false
	case wsUpCloseHeaders:
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: webs")
		return false
	case wsUpResetHeaders:
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: webs")
		rst()
		return false
	case wsUpStall, wsUp101Stall:
		if req.Header.Get("X-Fault") == wsUp101Stall {
			io.WriteString(conn, head)
		}
		drain()
		return false
	case wsUpInterimClose:
		io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
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
		rst()
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
