package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"gitlab.com/edge/edge/hop"
)

// setRequestID keeps a trusted proxy's request id when it is sane, or makes one, and sends it on.
func setRequestID(w *hop.Record, r *http.Request, trusted bool) {
	if v := r.Header[hop.HeaderRequestID]; trusted && len(v) == 1 && saneRequestID(v[0]) {
		w.ID[0] = v[0]
	} else {
		w.ID[0] = newRequestID()
	}
	r.Header[hop.HeaderRequestID] = w.ID[:]
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
func (f *Front) logAccess(ctx context.Context, w *hop.Record, r *http.Request, start time.Time) {
	access := f.access.Load()
	if access == nil {
		if f.log.Enabled(ctx, slog.LevelInfo) {
			e := accessEntryOf(w, r, time.Since(start))
			f.log.LogAttrs(ctx, slog.LevelInfo, "access", e.attrs()...)
		}
		return
	}
	if access.info {
		now := time.Now()
		e := accessEntryOf(w, r, now.Sub(start))
		access.write(now, &e)
	}
}

func accessEntryOf(w *hop.Record, r *http.Request, d time.Duration) accessEntry {
	return accessEntry{
		method: r.Method, path: r.URL.Path, status: w.StatusOrClosed(), bytes: w.Bytes, duration: d,
		route: w.Route, cell: w.Cell, agent: w.Agent, rule: w.Rule, cause: w.Cause,
		requestID: w.ID[0], remote: r.RemoteAddr,
	}
}
