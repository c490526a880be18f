package tunnel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// agentConn is one connection from the agent to the edge.
type agentConn struct {
	id        string // the edge's connection id, for logs
	session   *yamux.Session
	ctrl      *control
	srv       *http.Server
	started   time.Time
	edgeDrain chan struct{} // closed when the edge asks the agent to connect again
	log       *slog.Logger
}

// connect dials the edge, upgrades, and starts serving the session.
func (a *Agent) connect(ctx context.Context) (*agentConn, error) {
	rwc, id, err := a.handshake(ctx)
	if err != nil {
		return nil, err
	}
	session, err := yamux.Client(framed(rwc, a.opts.Guard), a.yamux)
	if err != nil {
		rwc.Close()
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	st, err := session.OpenStream()
	if err != nil {
		session.Close()
		return nil, fmt.Errorf("tunnel: open control stream: %w", err)
	}
	c := &agentConn{
		id:        id,
		session:   session,
		ctrl:      &control{stream: st},
		started:   time.Now(),
		edgeDrain: make(chan struct{}),
		log:       a.log.With("connection_id", id),
	}
	g := a.opts.Guard
	c.srv = &http.Server{
		// A panic serving a stream ends that stream (a 502 when no answer began), counted.
		Handler:           g.Handler("tunnel_stream", a.handler),
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
	}
	closeSession := func(bool) { session.Close() }
	go func() {
		defer g.Recover("tunnel_control", closeSession)
		c.srv.Serve(session) // a yamux session is a net.Listener of the streams the edge opens
	}()
	go func() {
		defer g.Recover("tunnel_control", closeSession)
		var once sync.Once
		c.ctrl.receive(func(typ string) {
			if typ == msgDrain {
				once.Do(func() { close(c.edgeDrain) })
			}
		})
	}()
	a.metrics.connects.WithLabelValues("ok").Inc()
	a.setConnected(1)
	c.log.Info("connected to edge", "url", a.connectURL)
	return c, nil
}

// handshake sends the connect request and gives the upgraded connection.
func (a *Agent) handshake(ctx context.Context) (io.ReadWriteCloser, string, error) {
	token, err := a.opts.Token(ctx)
	if err != nil {
		return nil, "", err
	}
	info, err := a.opts.Info.header()
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.HandshakeTimeout)
	defer cancel() // after a 101 the connection belongs to the caller: cancelling no longer touches it
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.connectURL, nil)
	if err != nil {
		return nil, "", fmt.Errorf("tunnel: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", UpgradeToken)
	req.Header.Set(InfoHeader, info)
	// RoundTrip, not a Client: a redirect is an error to see, not one to follow with the token.
	resp, err := a.client.RoundTrip(req)
	if err != nil {
		return nil, "", fmt.Errorf("tunnel: connect: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		return nil, "", &StatusError{StatusCode: resp.StatusCode, Message: errorMessage(resp.Body)}
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok || !strings.EqualFold(resp.Header.Get("Upgrade"), UpgradeToken) {
		resp.Body.Close()
		return nil, "", fmt.Errorf("tunnel: edge switched to %q, want %q", resp.Header.Get("Upgrade"), UpgradeToken)
	}
	return rwc, resp.Header.Get(ConnectionIDHeader), nil
}

// errorMessage reads the edge's {"error": cause, "message": ...}, or the start of whatever body
// it sent.
func errorMessage(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, maxErrorBody))
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil && (e.Message != "" || e.Error != "") {
		if e.Message != "" {
			return e.Message
		}
		return e.Error
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
}

// drain asks the edge to send no new requests and to close the connection once those in flight
// are done; after timeout, the agent closes it itself.
func (c *agentConn) drain(timeout time.Duration) {
	defer c.srv.Close()
	if c.session.IsClosed() {
		return
	}
	if err := c.ctrl.send(msgDrain); err != nil {
		c.session.Close()
		return
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.session.CloseChan():
		c.log.Info("connection drained")
	case <-t.C:
		c.log.Warn("connection did not drain in time, closing it", "timeout", timeout)
		c.session.Close()
	}
}
