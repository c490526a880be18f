package proxy

import (
	"bufio"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/tracing"
)

// Front is edge's HTTP front door: every request of the public and internal listeners passes
// the header policy, one match, one handler and one error writer, against the route table in
// force when it arrived. A reload swaps the table whole; requests in flight finish on theirs.
type Front struct {
	routes   atomic.Pointer[Routes]
	log      *slog.Logger
	access   *AccessLog // nil: access lines go to log
	metrics  *Metrics
	refusals refusals
	tracer   *tracing.Tracer // nil: no spans
	parking  *Parking        // nil: long polls are held by their handlers
	guard    *guard.Guard    // nil: panics still contained, logged to standard error
}

// NewFront makes a front; Swap gives it its first route table.
func NewFront(log *slog.Logger, metrics *Metrics) *Front {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Front{log: log, metrics: metrics}
}

// UseTracer makes a server span of every request (nil: none).
func (f *Front) UseTracer(t *tracing.Tracer) { f.tracer = t }

// UseParking parks held long polls of the public listener (see Parking); that listener must be
// served through p.Listener.
func (f *Front) UseParking(p *Parking) { f.parking = p }

// UseGuard logs and counts the panics of requests (see serve) under g.
func (f *Front) UseGuard(g *guard.Guard) { f.guard = g }

// UseAccessLog writes access lines to l (a buffered output, say) instead of the front's log.
func (f *Front) UseAccessLog(l *AccessLog) { f.access = l }

// Swap puts a new route table in force: new requests see it, those in flight finish on the one
// they started with, and the old runner proxy's idle upstream connections are closed.
func (f *Front) Swap(rt *Routes) error {
	if rt == nil || rt.Runner == nil {
		return errors.New("proxy: a route table needs the runner proxy")
	}
	if old := f.routes.Swap(rt); old != nil && old.Runner != rt.Runner {
		old.Runner.CloseIdleConnections()
	}
	return nil
}

// Routes is the table in force.
func (f *Front) Routes() *Routes { return f.routes.Load() }

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rt := f.routes.Load()
	rec := &recorder{ResponseWriter: w, parking: f.parking}
	trusted := rt.Headers.trusted(r.RemoteAddr)
	err := rt.Headers.clean(r, trusted)
	rec.setRequestID(r, trusted)
	var span trace.Span
	if f.tracer != nil {
		r, span = f.tracer.Server(r, trusted)
	}
	m := rt.match(r)
	rec.route = m.kind
	if err == nil {
		err = m.err
	}
	abort := false
	if err != nil {
		f.refuse(rec, r, err, rt.errorWriter(m.kind))
	} else {
		upgrade(r.Header, m.kind.upgradeRule())
		abort = f.serve(rt, rec, r, m.kind)
	}
	if p := rec.parked; p != nil {
		p.then(func() { f.served(rt, rec, r, span, start) })
		p.start()
		return
	}
	f.served(rt, rec, r, span, start)
	closeIfAborted(rec, abort)
}

// serve runs the route's handler. A panic ends this request alone, never the process: a crash
// before anything was written is answered 502 (cause panic) and the connection closed after;
// one after the answer began, or http.ErrAbortHandler (the answer cut short by the cell or the
// client), means the connection must close without more: abort, done after the access line.
func (f *Front) serve(rt *Routes, rec *recorder, r *http.Request, kind RouteKind) (abort bool) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		crashed := f.guard.Caught("request", v)
		if crashed && rec.status == 0 && rec.ResponseWriter != nil {
			rec.Header().Set("Connection", "close")
			writeErr(rec, errPanicked)
			return
		}
		if crashed {
			rec.cause = causePanic
		} else if rec.cause == "" {
			rec.cause = causeAnswerCut
		}
		abort = true
	}()
	kind.spec().serve(rt, rec, r)
	return false
}

// closeIfAborted closes the client's connection (guard.Abort) when the request was aborted, or
// when the client went away before any answer: net/http would otherwise make up an empty 200 for
// a handler that wrote nothing.
func closeIfAborted(rec *recorder, abort bool) {
	if abort || (rec.status == 0 && rec.cause == causeClientClosed) {
		guard.Abort(rec.ResponseWriter, rec.status != 0)
	}
}

// served is the end of every request of the public listener: its refusal remembered, its span
// ended, its access line written.
func (f *Front) served(rt *Routes, rec *recorder, r *http.Request, span trace.Span, start time.Time) {
	if rec.cause != "" && rec.cause != causeClientClosed {
		f.refusals.add(rec, r)
	}
	if span != nil {
		rec.endSpan(span, r)
	}
	if rt.AccessLog {
		f.logAccess(r.Context(), rec, r, start)
	}
}

// refuse answers a request the front will not route, before any backend sees it, with the route's
// error format (nil: WriteError's).
func (f *Front) refuse(w *recorder, r *http.Request, err error, format func(http.ResponseWriter, int, string, string)) {
	status, cause := statusOf(err)
	if format == nil {
		format = WriteError
	}
	w.cause = cause
	format(w, status, cause, err.Error())
	if f.metrics != nil {
		f.metrics.requests.WithLabelValues(w.route.trafficLabel(), "edge", codeClass(status)).Inc()
	}
}

// InternalHandler serves the internal listener through the same policy: its peers are other
// edges, whose forwarding headers, request ids and Edge-* routing headers it keeps.
func (f *Front) InternalHandler() http.Handler {
	policy := HeaderPolicy{TrustAll: true, KeepEdge: true}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rt := f.routes.Load()
		rec := &recorder{ResponseWriter: w, route: RouteInternal}
		err := policy.clean(r, true)
		rec.setRequestID(r, true)
		var span trace.Span
		if f.tracer != nil {
			r, span = f.tracer.Server(r, true)
		}
		if err == nil {
			err = RouteInternal.notConfigured(rt)
		}
		abort := false
		if err != nil {
			f.refuse(rec, r, err, nil)
		} else {
			upgrade(r.Header, RouteInternal.upgradeRule())
			abort = f.serve(rt, rec, r, RouteInternal)
		}
		if rec.cause != "" && rec.cause != causeClientClosed {
			f.refusals.add(rec, r)
		}
		if span != nil {
			rec.endSpan(span, r)
		}
		if rt.AccessLog {
			f.logAccess(r.Context(), rec, r, start)
		}
		closeIfAborted(rec, abort)
	})
}

// Hijack records a protocol switch (a WebSocket or the agent tunnel) as a 101 answer.
func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, brw, err
}
