package tunnel

import (
	"bufio"
	"net"
	"net/http"
)

// endsWithEdge is the ResponseWriter of a request the agent's proxy may switch to another
// protocol (a WebSocket): once the edge's side of the switched stream ends, the stream closes,
// and the proxy's relay with it, both ways. The proxy would pass the end on as a half-close and
// wait for the upstream to end its side; an upstream that does not read (its writes blocked
// since the edge's client stopped reading and went away) then held the relay, its connection
// and the stream until the edge timed the stream out (yamux's StreamCloseTimeout, 5 minutes).
// The edge has ended both ways of its own relay by then (a stream has no half-close), so
// nothing is lost.
type endsWithEdge struct{ http.ResponseWriter }

func (w endsWithEdge) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return closedAtEnd{conn}, brw, nil
}

func (w endsWithEdge) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// closedAtEnd closes the stream when reading it ends: the edge closed its side.
type closedAtEnd struct{ net.Conn }

func (c closedAtEnd) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.Conn.Close()
	}
	return n, err
}
