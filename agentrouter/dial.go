package agentrouter

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tunnel"
)

// Dial opens a raw TCP stream to port on the agent's side (a workspace's sshd), through the same
// routing as a request: a local tunnel, or the edge that holds the agent, waiting for it up to
// agents.wait. The stream is an HTTP upgrade (tunnel.TCPUpgradeToken) that every hop passes on;
// here one end of an in-memory pipe takes the place of a client's connection.
func (a *AgentRouter) Dial(ctx context.Context, agentID string, port int) (net.Conn, error) {
	// ctx bounds the dial; the stream lives until its connection is closed (ReverseProxy ends an
	// upgraded connection when the request's context ends).
	streamCtx, endStream := context.WithCancel(context.WithoutCancel(ctx))
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, "http://edge/", nil)
	if err != nil {
		endStream()
		return nil, err
	}
	req.RemoteAddr = "127.0.0.1:0"
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", tunnel.TCPUpgradeToken)
	ours, theirs := net.Pipe()
	w := &pipeWriter{header: http.Header{}, conn: theirs, hijacked: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		// A panic ends this stream: the pipe closes, so Dial's caller reads its end.
		defer a.o.Guard.Recover("request", func(bool) { theirs.Close() })
		defer close(done)
		a.Forward(w, req, AgentTarget{AgentID: agentID, Port: port, Path: "/"})
	}()
	select {
	case <-w.hijacked:
	case <-done:
		endStream()
		ours.Close()
		theirs.Close()
		return nil, fmt.Errorf("%w: %d %s", hop.ErrDialRefused, w.status, strings.TrimSpace(w.body.String()))
	case <-ctx.Done():
		endStream()
		ours.Close()
		theirs.Close()
		return nil, ctx.Err()
	}
	br := bufio.NewReader(ours)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		endStream()
		ours.Close()
		return nil, fmt.Errorf("%w: %w", hop.ErrDialRefused, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		endStream()
		ours.Close()
		return nil, fmt.Errorf("%w: %d %s", hop.ErrDialRefused, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return &bufferedConn{Conn: ours, r: br, end: endStream}, nil
}

// pipeWriter is the response writer of a Dial: an error answer is kept for Dial to report, an
// upgrade takes over the pipe.
type pipeWriter struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	conn     net.Conn
	once     sync.Once
	hijacked chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len() < 4096 {
		w.body.Write(b)
	}
	return len(b), nil
}

func (w *pipeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.once.Do(func() { close(w.hijacked) })
	return w.conn, bufio.NewReadWriter(bufio.NewReader(w.conn), bufio.NewWriter(w.conn)), nil
}

// bufferedConn reads first what the response reader had buffered past the 101.
type bufferedConn struct {
	net.Conn
	r   *bufio.Reader
	end context.CancelFunc
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *bufferedConn) Close() error {
	err := c.Conn.Close()
	c.end()
	return err
}
