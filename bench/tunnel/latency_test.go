package tunnelbench

import (
	"io"
	"net"
	"time"
)

// delayed forwards bytes between two TCP connections, delivering each chunk oneWay after it was
// read, so a loopback connection behaves like one with a round trip time of 2*oneWay (bandwidth
// stays unlimited). That is where a multiplexer's per-stream window shows: a stream can carry at
// most window/RTT.
func delayed(a, b net.Conn, oneWay time.Duration) {
	pump := func(dst, src net.Conn) {
		type chunk struct {
			at   time.Time
			data []byte
		}
		q := make(chan chunk, 1<<14)
		go func() {
			defer close(q)
			for {
				buf := make([]byte, 64<<10)
				n, err := src.Read(buf)
				if n > 0 {
					q <- chunk{time.Now().Add(oneWay), buf[:n]}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer dst.Close()
			for c := range q {
				time.Sleep(time.Until(c.at))
				if _, err := dst.Write(c.data); err != nil {
					io.Copy(io.Discard, src)
					return
				}
			}
		}()
	}
	pump(a, b)
	pump(b, a)
}

// linkPair is tcpPair with a delaying hop in the middle (two real loopback connections).
func linkPair(oneWay time.Duration) (edge, agent net.Conn, err error) {
	if oneWay == 0 {
		return tcpPair()
	}
	edge, mid1, err := tcpPair()
	if err != nil {
		return nil, nil, err
	}
	mid2, agent, err := tcpPair()
	if err != nil {
		edge.Close()
		mid1.Close()
		return nil, nil, err
	}
	delayed(mid1, mid2, oneWay)
	return edge, agent, nil
}
