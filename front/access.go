package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// HeaderRequestID carries a request's id: kept from a trusted proxy, otherwise made here; sent
// upstream and returned to the client.
const HeaderRequestID = "X-Request-Id"

// recorder is the response writer every route writes through: it keeps what the access log,
// metrics and the request id need. Unwrap lets http.ResponseController reach the connection's
// Flush, Hijack and deadlines.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	id     [1]string // the X-Request-Id value, as a header slice without an allocation
	route  RouteKind
	cell   uint64
	agent  string
	rule   string
	cause  string
	token  TokenKind // the kind of token a runner request was routed by, for its span
	// parking takes held long polls off the server (public listener); parked is this
	// request's, once parked.
	parking *Parking
	parked  *parked
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
		// The cell may have answered with its own id; the client gets the one edge logged.
		w.ResponseWriter.Header()[HeaderRequestID] = w.id[:]
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recorderOf finds the front's recorder under w (through writers that wrap it and say so with
// Unwrap), or nil when a handler runs without the front.
func recorderOf(w http.ResponseWriter) *recorder {
	for {
		switch v := w.(type) {
		case *recorder:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// setRequestID keeps a trusted proxy's request id when it is sane, or makes one, and sends it on.
func (w *recorder) setRequestID(r *http.Request, trusted bool) {
	if v := r.Header[HeaderRequestID]; trusted && len(v) == 1 && saneRequestID(v[0]) {
		w.id[0] = v[0]
	} else {
		w.id[0] = newRequestID()
	}
	r.Header[HeaderRequestID] = w.id[:]
}

func saneRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// logAccess writes the one access line of a request: through the access log the server gave
// (UseAccessLog), or else through the front's own logger.
func (f *Front) logAccess(ctx context.Context, w *recorder, r *http.Request, start time.Time) {
	if f.access == nil {
		if f.log.Enabled(ctx, slog.LevelInfo) {
			e := w.accessEntry(r, time.Since(start))
			f.log.LogAttrs(ctx, slog.LevelInfo, "access", e.attrs()...)
		}
		return
	}
	if f.access.info {
		now := time.Now()
		e := w.accessEntry(r, now.Sub(start))
		f.access.write(now, &e)
	}
}

func (w *recorder) accessEntry(r *http.Request, d time.Duration) accessEntry {
	status := w.status
	if status == 0 {
		status = statusClientClosed
	}
	return accessEntry{
		method: r.Method, path: r.URL.Path, status: status, bytes: w.bytes, duration: d,
		route: w.route.String(), cell: w.cell, agent: w.agent, rule: w.rule, cause: w.cause,
		requestID: w.id[0], remote: r.RemoteAddr,
	}
}
