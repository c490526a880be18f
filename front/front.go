// Package front is edge's HTTP front door: every request of the public and internal listeners
// passes the header policy, one match against the route table, one handler and one error writer,
// and leaves one access line. The routes are the modules'; the front knows none of them.
package front

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/tracing"
)

// Options configure a Front.
type Options struct {
	Log *slog.Logger
	// Requests is edge_requests_total, where the front counts its refusals; nil: not counted.
	Requests *prometheus.CounterVec
	Tracer   *tracing.Tracer // a server span of every request; nil: none
	Guard    *guard.Guard    // logs and counts the panics of requests; nil: contained all the same
	Metrics  *Metrics        // nil: not counted
}

// Front serves every request against the route table in force when it arrived. A reload swaps
// the table whole; requests in flight finish on theirs.
type Front struct {
	routes   atomic.Pointer[Routes]
	log      *slog.Logger
	access   atomic.Pointer[AccessLog] // nil: access lines go to log
	requests *prometheus.CounterVec
	refusals refusals
	tracer   *tracing.Tracer
	guard    *guard.Guard
	metrics  *Metrics
}

// New makes a front; Swap gives it its first route table.
func New(o Options) *Front {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Front{log: o.Log, requests: o.Requests, tracer: o.Tracer, guard: o.Guard, metrics: o.Metrics}
}

// UseAccessLog writes access lines to l (a buffered output, say) instead of the front's log;
// nil goes back to the log.
func (f *Front) UseAccessLog(l *AccessLog) { f.access.Store(l) }

// Swap puts a new route table in force: new requests see it, those in flight finish on the one
// they started with, and the old one is retired.
func (f *Front) Swap(rt *Routes) error {
	if err := rt.check(); err != nil {
		return err
	}
	if old := f.routes.Swap(rt); old != nil && old.Retire != nil {
		old.Retire()
	}
	return nil
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rt := f.routes.Load()
	rec := &hop.Record{ResponseWriter: w}
	trusted := rt.Headers.trusted(r.RemoteAddr)
	err := rt.Headers.clean(r, trusted)
	m := rt.match(r)
	if err == nil {
		err = m.err
	}
	f.handle(rt, rec, r, m.route, trusted, err, start)
}

// InternalHandler serves the internal listener through the same policy: its peers are other
// edges, whose forwarding headers, request ids and Edge-* routing headers it keeps.
func (f *Front) InternalHandler() http.Handler {
	policy := HeaderPolicy{TrustAll: true, KeepEdge: true}
	none := &Route{Name: "internal", Rule: "no internal listener"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rt := f.routes.Load()
		rec := &hop.Record{ResponseWriter: w}
		route := rt.Internal
		if route == nil {
			route = none
		}
		err := policy.clean(r, true)
		if err == nil {
			err = route.notConfigured()
		}
		f.handle(rt, rec, r, route, true, err, start)
	})
}

// handle is one request from its route on: the request id, the server span, the handler or the
// refusal, and the end (now, or when a request that outlives its handler ends).
func (f *Front) handle(rt *Routes, rec *hop.Record, r *http.Request, route *Route, trusted bool, err error, start time.Time) {
	setRequestID(rec, r, trusted)
	var span trace.Span
	if f.tracer != nil {
		r, span = f.tracer.Server(r, trusted)
	}
	rec.Route = route.Name
	if route.Record != nil {
		route.Record(rec)
	}
	abort := false
	if err != nil {
		f.refuse(rec, r, err, route)
	} else {
		upgrade(r.Header, route.Upgrade)
		abort = f.serve(rec, r, route)
	}
	if later := rec.Later; later != nil {
		later.Then(func() { f.served(rt, rec, r, route, span, start) })
		later.Start()
		return
	}
	f.served(rt, rec, r, route, span, start)
	closeIfAborted(rec, abort)
}

// serve runs the route's handler. A panic ends this request alone, never the process: a crash
// before anything was written is answered 502 (cause panic) and the connection closed after;
// one after the answer began, or http.ErrAbortHandler (the answer cut short by the cell or the
// client), means the connection must close without more: abort, done after the access line.
func (f *Front) serve(rec *hop.Record, r *http.Request, route *Route) (abort bool) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		crashed := f.guard.Caught("request", v)
		if crashed && rec.Status == 0 && rec.ResponseWriter != nil {
			rec.Header().Set("Connection", "close")
			hop.Error(rec, hop.ErrPanicked)
			return
		}
		if crashed {
			rec.Cause = hop.CausePanic
		} else if rec.Cause == "" {
			rec.Cause = hop.CauseAnswerCut
		}
		abort = true
	}()
	route.Handler.ServeHTTP(rec, r)
	return false
}

// closeIfAborted closes the client's connection (guard.Abort) when the request was aborted, or
// when the client went away before any answer: net/http would otherwise make up an empty 200 for
// a handler that wrote nothing.
func closeIfAborted(rec *hop.Record, abort bool) {
	if abort || (rec.Status == 0 && rec.Cause == hop.CauseClientClosed) {
		guard.Abort(rec.ResponseWriter, rec.Status != 0)
	}
}

// served is the end of every request: its refusal remembered, its span ended, its access line
// written.
func (f *Front) served(rt *Routes, rec *hop.Record, r *http.Request, route *Route, span trace.Span, start time.Time) {
	if rec.Cause != "" && rec.Cause != hop.CauseClientClosed {
		f.refusals.add(rec, r)
	}
	if span != nil {
		endSpan(rec, span, r, route)
	}
	if f.metrics != nil {
		f.metrics.count(rec)
	}
	if rt.AccessLog {
		f.logAccess(r.Context(), rec, r, start)
	}
}

// refuse answers a request the front will not route, before any backend sees it, in the route's
// error format.
func (f *Front) refuse(w *hop.Record, r *http.Request, err error, route *Route) {
	status, cause := hop.StatusOf(err)
	w.Cause = cause
	route.errorWriter()(w, status, cause, err.Error())
	if f.requests != nil {
		f.requests.WithLabelValues(route.traffic(), "edge", hop.CodeClass(status)).Inc()
	}
}
