package tunnel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

var (
	// ErrAgentNotConnected: this edge holds no connection for the agent (the caller may look in the
	// registry or wait).
	ErrAgentNotConnected = errors.New("tunnel: agent not connected to this edge")
	// ErrConnectionGone: the connection named by id is closed or draining.
	ErrConnectionGone = errors.New("tunnel: connection gone")
	// ErrTooManyStreams: the agent already has ServerOptions.MaxStreamsPerAgent requests in flight
	// (the caller answers 503).
	ErrTooManyStreams = errors.New("tunnel: too many concurrent streams for agent")
	// ErrServerClosed: the Server is draining or closed and opens no new stream.
	ErrServerClosed = errors.New("tunnel: server closed")
	// ErrUnauthorized matches a StatusError for 401 or 403: the edge refused the agent's token.
	ErrUnauthorized = errors.New("tunnel: edge refused the agent token")
	// ErrNoSplice: none of the agent's connections (or not the one named) takes splice streams
	// (an older agent, or one that keeps per-request serving for its traces).
	ErrNoSplice = errors.New("tunnel: the agent does not splice")
)

// RefusedError is the agent's answer to a splice stream it did not open: a port it does not
// serve (403), an upstream it cannot reach (502). It is the answer the agent gives a request for
// the same port on the per-request path, so the caller hands it on as that request's answer.
type RefusedError struct {
	StatusCode int
	Header     http.Header
	Body       []byte // at most maxErrorBody bytes
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("tunnel: the agent refused the splice stream: %d %s", e.StatusCode, bytes.TrimSpace(e.Body))
}

// Response is the refusal as the answer to req.
func (e *RefusedError) Response(req *http.Request) *http.Response {
	h := e.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	h.Del("Connection")
	return &http.Response{
		Status: fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode)), StatusCode: e.StatusCode,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(bytes.NewReader(e.Body)), ContentLength: int64(len(e.Body)), Request: req,
	}
}

// StatusError is the agent's error when the edge answered the connect request with something
// other than 101 Switching Protocols.
type StatusError struct {
	StatusCode int
	Message    string // the edge's {"error": ...}, or the start of its body
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("tunnel: edge answered %d: %s", e.StatusCode, msg)
}

func (e *StatusError) Is(target error) bool {
	return target == ErrUnauthorized && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// errOpenStream marks a failure to open a stream: nothing of the request was sent.
var errOpenStream = errors.New("tunnel: open stream")

// errFlusherCrashed fails a frame writer whose flusher panicked: its connection closes.
var errFlusherCrashed = errors.New("tunnel: frame flusher crashed")
