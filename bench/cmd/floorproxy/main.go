// Command floorproxy is edgebench's "Go floor" peer: the least a Go proxy can do for the legacy
// case's request, to show what Go's runtime and the kernel cost on this machine apart from
// net/http. It reads a bodiless HTTP/1.1 request itself, adds X-Forwarded-For, writes it on an
// upstream connection of its own (one per client connection), reads the answer's head and its
// Content-Length body, and writes both back in one write. Anything else (a request body, an
// answer without Content-Length) is not what it measures: it answers 501 or closes. It is not a
// proxy to deploy.
//
//	floorproxy --listen 127.0.0.1:8082 --upstream 127.0.0.1:3001
//
// It prints one line on stderr when it listens.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
)

// maxHead bounds a request's or an answer's head.
const maxHead = 64 << 10

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "upstream host:port")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil || *upstream == "" {
		fmt.Fprintln(os.Stderr, "floorproxy: need --upstream host:port and a --listen address:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "floorproxy: listening %s, upstream %s, GOMAXPROCS %d, %s\n", ln.Addr(), *upstream, runtime.GOMAXPROCS(0), runtime.Version())
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "floorproxy:", err)
			os.Exit(1)
		}
		go serve(c, *upstream)
	}
}

// serve proxies c's requests in turn until either side ends or sends what the floor does not do.
func serve(c net.Conn, upstream string) {
	defer c.Close()
	var up net.Conn
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	client := bufio.NewReaderSize(c, 4096)
	var ur *bufio.Reader
	forwarded := []byte("X-Forwarded-For: " + hostOf(c.RemoteAddr()) + "\r\n\r\n")
	var req, out []byte
	for {
		var err error
		var body int64
		if req, body, err = readHead(client, req[:0]); err != nil {
			return
		}
		if body != 0 {
			io.WriteString(c, "HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		if up == nil {
			if up, err = net.Dial("tcp", upstream); err != nil {
				io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				return
			}
			ur = bufio.NewReaderSize(up, 4096)
		}
		req = append(req[:len(req)-2], forwarded...) // before the blank line
		if _, err := up.Write(req); err != nil {
			return
		}
		var length int64
		if out, length, err = readHead(ur, out[:0]); err != nil || length < 0 {
			return
		}
		head := len(out)
		out = slices.Grow(out, int(length))[:head+int(length)]
		if _, err := io.ReadFull(ur, out[head:]); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// readHead appends a head (start line, fields, blank line) to buf and tells the length of the
// body that follows: its Content-Length, 0 without one, -1 when it is chunked.
func readHead(r *bufio.Reader, buf []byte) ([]byte, int64, error) {
	var length int64
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil, 0, err
		}
		if buf = append(buf, line...); len(buf) > maxHead {
			return nil, 0, errors.New("head too long")
		}
		switch name, value, _ := bytes.Cut(line, []byte(":")); {
		case len(line) <= 2:
			return buf, length, nil
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64); err != nil || length < 0 {
				return nil, 0, errors.New("bad Content-Length")
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			length = -1
		}
	}
}

func hostOf(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	return a.String()
}
