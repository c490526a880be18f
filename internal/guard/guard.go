// Package guard contains panics. Every goroutine edge starts runs under a Guard: a panic ends
// that goroutine's request, connection or stream (its cleanup runs), is logged once with its
// stack and counted in edge_panics_total{where}, and the process keeps serving the rest.
package guard

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Guard logs and counts contained panics. The zero of *Guard (nil) still contains them and
// logs to standard error, so a package used without one is never the process's end.
type Guard struct {
	log    *slog.Logger
	panics *prometheus.CounterVec
}

// New makes a guard whose panics are logged to log and counted in reg (nil: not counted).
func New(log *slog.Logger, reg prometheus.Registerer) (*Guard, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{log: log, panics: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edge_panics_total",
		Help: "Panics contained: the request, connection or stream ended, the process kept serving. where: the kind of goroutine.",
	}, []string{"where"})}
	if reg != nil {
		if err := reg.Register(g.panics); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Zero makes the count of each kind of goroutine exist at 0: a panic's series that began at 1
// would show no increase, and its alert would miss the first panic.
func (g *Guard) Zero(wheres ...string) {
	for _, w := range wheres {
		g.panics.WithLabelValues(w)
	}
}

// Go runs f on a new goroutine; a panic in it is contained and f's own defers run as it unwinds.
func (g *Guard) Go(where string, f func()) {
	go func() {
		defer g.Recover(where, nil)
		f()
	}()
}

// Recover, deferred at the top of a goroutine, contains a panic: cleanup (nil: none) runs with
// whether it was a crash (false: http.ErrAbortHandler, the abort a handler means by it).
func (g *Guard) Recover(where string, cleanup func(crashed bool)) {
	v := recover()
	if v == nil {
		return
	}
	crashed := g.Caught(where, v)
	if cleanup != nil {
		cleanup(crashed)
	}
}

// Caught logs and counts a value recovered by the caller, with the stack of the panic (call it
// from the deferred function). False for http.ErrAbortHandler: an abort, neither logged nor
// counted as a crash.
func (g *Guard) Caught(where string, v any) bool {
	if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
		return false
	}
	stack := string(debug.Stack())
	if g == nil {
		slog.New(slog.NewTextHandler(os.Stderr, nil)).Error("panic contained", "where", where, "panic", v, "stack", stack)
		return true
	}
	g.log.Error("panic contained", "where", where, "panic", v, "stack", stack)
	g.panics.WithLabelValues(where).Inc()
	return true
}

// Func is f under the guard, for starters of goroutines that take a func (sync.WaitGroup.Go,
// errgroup): a panic in it is contained as Go contains one.
func (g *Guard) Func(where string, f func()) func() {
	return func() {
		defer g.Recover(where, nil)
		f()
	}
}

// Handler contains the panics of h's requests, for servers other than the front (which has its
// own, with edge's error format): a crash before the answer began is a 502; after it, or an
// abort, the connection closes (net/http's own handling of http.ErrAbortHandler).
func (g *Guard) Handler(where string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if g.Caught(where, v) && !tw.wrote {
				w.Header().Set("Connection", "close")
				http.Error(w, "edge failed serving this request (contained; see its log)", http.StatusBadGateway)
				return
			}
			Abort(w, tw.wrote)
		}()
		h.ServeHTTP(tw, r)
	})
}

// Abort ends w's request as http.ErrAbortHandler does: the connection closes (an HTTP/2 stream
// is reset) with no answer made up. What the answer had begun (its head, a buffered part of its
// body) is sent first: a connection that ends with nothing looks to a client (another edge, an
// edge's transport over a tunnel, a browser) like a kept-alive connection closed while idle, and
// it sends the request again.
func Abort(w http.ResponseWriter, begun bool) {
	if begun {
		_ = http.NewResponseController(w).Flush()
	}
	panic(http.ErrAbortHandler)
}

type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Contained is how many panics g has contained where.
func (g *Guard) Contained(where string) float64 {
	if g == nil {
		return 0
	}
	var m dto.Metric
	if err := g.panics.WithLabelValues(where).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Call runs f, containing a panic as Recover does and returning it as an error wrapping
// ErrCrashed: for functions run on goroutines edge does not start, whose panics it could not
// otherwise recover (singleflight's DoChan re-panics on a goroutine of its own).
func (g *Guard) Call(where string, f func() (any, error)) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			g.Caught(where, r)
			v, err = nil, fmt.Errorf("%w: %v", ErrCrashed, r)
		}
	}()
	return f()
}
