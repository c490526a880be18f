package cellrouter

import (
	"context"
	"net/http"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/wire"
)

// pollJob proxies a jobs/request. When it can be parked (HTTP/1.1 on the listener that takes
// connections back, cell transports built here, no tracing), the request goes out through the
// parker: if the cell holds it, the client's connection is handed to the parking and true
// returned; the answer is written, and then run, when the cell answers. Otherwise the poll is
// served here and false returned.
func (p *Router) pollJob(w *hop.Record, r *http.Request, t *target, rp *addressProxies, then func()) bool {
	pl := p.metrics.signals.startPoll(r, t.cell.ID)
	if p.admission != nil {
		r = r.WithContext(context.WithValue(r.Context(), pollKey{}, &pl))
	}
	if !p.parkable || p.parking == nil || r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close || !p.parking.Accepting() {
		rp.longPoll.ServeHTTP(w, r)
		pl.end(w.Status)
		return false
	}
	var held *wire.Held
	if p.direct(rp, r) {
		held = p.pollDirect(w, r, t, rp)
	} else {
		pw := &pollWriter{ResponseWriter: w}
		rp.parker.ServeHTTP(pw, r)
		held = pw.held
	}
	if held == nil {
		pl.end(w.Status)
		return false
	}
	// The request is out and its answer awaited. The second pass reads it through the Held; the
	// server's context of the request ends with the handler, so the pass keeps only its values.
	second := rp.resume(rp.parker, held)
	answer := func(ctx context.Context, rw http.ResponseWriter) { second.ServeHTTP(rw, r.WithContext(ctx)) }
	if !p.parking.Park(w, r, held, answer) {
		answer(r.Context(), w) // the listener drains: held here, as a poll that was never parked
		pl.end(w.Status)
		return false
	}
	w.Later.Then(func() { pl.end(w.Status); then() })
	// The request body's reader holds the server's connection too.
	if b, ok := r.Body.(*replayBody); ok {
		b.closer = http.NoBody
	}
	return true
}

// pollWriter is what the parker's first pass writes to: the Held of a poll the cell holds comes
// back through the reverse proxy's error handler, and nothing is written.
type pollWriter struct {
	http.ResponseWriter
	held *wire.Held
}

func (w *pollWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
