package testnet

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// ServeRaw accepts connections on a loopback port until the test ends, each handled by handle
// (then closed), and returns the address.
func ServeRaw(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// FlakyCell answers each connection's first request 200 and drops the connection at its second,
// having read it: a kept-alive connection the cell closes as a request arrives. seen counts the
// requests read, by method.
func FlakyCell(t testing.TB) (addr string, seen func(method string) int) {
	t.Helper()
	var mu sync.Mutex
	count := map[string]int{}
	addr = ServeRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			mu.Lock()
			count[req.Method]++
			mu.Unlock()
			if i == 1 {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	return addr, func(method string) int {
		mu.Lock()
		defer mu.Unlock()
		return count[method]
	}
}
