package main

import (
	"net"
	"sync"
)

// listen opens a TCP listener; with max > 0 it holds at most max connections open at once,
// making further clients wait in the kernel's accept queue instead of exhausting descriptors.
func listen(addr string, max int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || max <= 0 {
		return ln, err
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, max)}, nil
}

type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
