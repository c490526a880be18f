package hop

import (
	"bufio"
	"net"
	"net/http"
)

// Record is the response writer every route answers through, and what the access line, the
// span, the metrics and the status page learn of the request: the front makes one per request,
// the routers fill in what they decide. Unwrap lets http.ResponseController reach the
// connection's Flush, Hijack and deadlines.
type Record struct {
	http.ResponseWriter
	Status int
	Bytes  int64
	ID     [1]string // the X-Request-Id value, as a header slice without an allocation
	Route  string
	Cell   uint64
	Agent  string
	Rule   string
	Cause  string
	Token  string // the kind of token a runner request was routed by, for its span
	// Later, when set by the route's handler, is the end of a request that outlives its handler
	// (a parked long poll): what is left of the request runs when it says.
	Later Later
}

// Later is a request's end that happens after its handler returned.
type Later interface {
	// Then adds f to what runs at the end, in order.
	Then(f func())
	// Start begins the wait; called once, after the last Then.
	Start()
}

func (w *Record) WriteHeader(code int) {
	if w.Status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.Status = code
		// The cell may have answered with its own id; the client gets the one edge logged.
		w.ResponseWriter.Header()[HeaderRequestID] = w.ID[:]
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Record) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.Bytes += int64(n)
	return n, err
}

func (w *Record) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack records a protocol switch (a WebSocket or the agent tunnel) as a 101 answer.
func (w *Record) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.Status == 0 {
		w.Status = http.StatusSwitchingProtocols
	}
	return conn, brw, err
}

// StatusOrClosed is the answer's status, or 499 when none was written.
func (w *Record) StatusOrClosed() int {
	if w.Status == 0 {
		return StatusClientClosed
	}
	return w.Status
}

// RecordOf finds the front's record under w (through writers that wrap it and say so with
// Unwrap), or nil when a handler runs without the front.
func RecordOf(w http.ResponseWriter) *Record {
	for {
		switch v := w.(type) {
		case *Record:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}
