package front

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// AccessLog writes the access lines itself: slog's per-record cost (attributes, a record, the
// handler's state and lock) was most of a request's access log cost, for a line whose fields are
// always the same. A line is appended into a pooled buffer and goes out in one Write, so a line
// buffer under it never sees part of one; its bytes are those slog's handler would have written.
type AccessLog struct {
	w    io.Writer // takes concurrent Writes, as server's lineBuffer does
	text bool
	info bool
	// lines keeps line buffers between requests; one longer than maxPooledLine (a huge path)
	// is left to the collector rather than kept for ever.
	lines sync.Pool
}

// NewAccessLog writes access lines to w in format ("text", otherwise JSON, as the server's slog
// logger chooses), or none when info is not enabled at the configured level.
func NewAccessLog(w io.Writer, format string, info bool) *AccessLog {
	l := &AccessLog{w: w, text: format == "text", info: info}
	l.lines.New = func() any { b := make([]byte, 0, 512); return &b }
	return l
}

// accessEntry is what one access line says, in the order it says it.
type accessEntry struct {
	method, path       string
	status             int
	bytes              int64
	duration           time.Duration
	route              string
	cell               uint64 // 0: none
	agent, rule, cause string // "": none
	requestID, remote  string
}

const maxPooledLine = 16 << 10

func (l *AccessLog) write(t time.Time, e *accessEntry) {
	bp := l.lines.Get().(*[]byte)
	b := l.appendLine((*bp)[:0], t, e)
	_, _ = l.w.Write(b) // as slog's Logger does, a failed write is not the request's error
	if cap(b) <= maxPooledLine {
		*bp = b
		l.lines.Put(bp)
	}
}

// appendLine appends the line slog's handler writes for the record ("access" at info, time t,
// e's attributes) through a ReplaceAttr that leaves them as they are.
func (l *AccessLog) appendLine(b []byte, t time.Time, e *accessEntry) []byte {
	if l.text {
		b = append(b, "time="...)
		b = appendSlogTime(b, t, true)
		b = append(b, " level=INFO msg=access"...)
	} else {
		b = append(b, `{"time":`...)
		b = appendSlogTime(b, t, false)
		b = append(b, `,"level":"INFO","msg":"access"`...)
	}
	f := lineFields{b: b, text: l.text}
	f.str("method", e.method)
	f.str("path", e.path)
	f.int("status", int64(e.status))
	f.int("bytes", e.bytes)
	f.str("duration", e.duration.String()) // inlined: the string stays on the stack
	f.str("route", e.route)
	if e.cell != 0 {
		f.uint("cell", e.cell)
	}
	if e.agent != "" {
		f.str("agent_id", e.agent)
	}
	if e.rule != "" {
		f.str("rule", e.rule)
	}
	if e.cause != "" {
		f.str("cause", e.cause)
	}
	f.str("request_id", e.requestID)
	f.str("remote", e.remote)
	if !l.text {
		f.b = append(f.b, '}')
	}
	return append(f.b, '\n')
}

// attrs are e's fields for slog, when the access line goes through the front's own logger.
func (e *accessEntry) attrs() []slog.Attr {
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("method", e.method),
		slog.String("path", e.path),
		slog.Int("status", e.status),
		slog.Int64("bytes", e.bytes),
		slog.String("duration", e.duration.String()),
		slog.String("route", e.route),
	)
	if e.cell != 0 {
		attrs = append(attrs, slog.Uint64("cell", e.cell))
	}
	if e.agent != "" {
		attrs = append(attrs, slog.String("agent_id", e.agent))
	}
	if e.rule != "" {
		attrs = append(attrs, slog.String("rule", e.rule))
	}
	if e.cause != "" {
		attrs = append(attrs, slog.String("cause", e.cause))
	}
	return append(attrs, slog.String("request_id", e.requestID), slog.String("remote", e.remote))
}

// lineFields appends key=value (text) or ,"key":value (JSON); the keys need no escaping.
type lineFields struct {
	b    []byte
	text bool
}

func (f *lineFields) key(k string) {
	if f.text {
		f.b = append(f.b, ' ')
		f.b = append(f.b, k...)
		f.b = append(f.b, '=')
		return
	}
	f.b = append(f.b, ',', '"')
	f.b = append(f.b, k...)
	f.b = append(f.b, '"', ':')
}

func (f *lineFields) str(k, v string) {
	f.key(k)
	if f.text {
		f.b = appendSlogText(f.b, v)
		return
	}
	f.b = append(f.b, '"')
	f.b = appendSlogJSON(f.b, v)
	f.b = append(f.b, '"')
}

func (f *lineFields) int(k string, v int64) {
	f.key(k)
	f.b = strconv.AppendInt(f.b, v, 10)
}

func (f *lineFields) uint(k string, v uint64) {
	f.key(k)
	f.b = strconv.AppendUint(f.b, v, 10)
}
