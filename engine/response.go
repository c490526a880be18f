package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is a request's http.ResponseWriter, written to the connection as net/http's server
// writes one: a small answer gets its Content-Length, a longer one is chunked (closed after, in
// HTTP/1.0), a HEAD or a 204 or 304 none; Date, a sniffed Content-Type and Connection as net/http
// sets them.
type response struct {
	c           *conn
	req         *http.Request
	body        *body // nil: no body
	header      http.Header
	status      int
	wroteHeader bool
	hijacked    bool
	noBody      bool  // HEAD, 1xx, 204, 304
	declared    int64 // the handler's Content-Length; -1: none
	written     int64
	chunking    bool
	closeAfter  bool
	err         error // sticky: the connection failed
	pending     []byte
	buffer      [2 << 10]byte // the answer's start, held to learn its length

	mu        sync.Mutex // committed, and the connection's writer before it: a 100 Continue
	committed bool       // the head is written
}

func (w *response) reset(c *conn, r *http.Request) {
	b, _ := r.Body.(*body)
	*w = response{c: c, req: r, body: b, header: make(http.Header), declared: -1}
	w.pending = w.buffer[:0]
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.hijacked || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.interim(code)
		return
	}
	w.wroteHeader, w.status = true, code
	w.noBody = w.req.Method == http.MethodHead || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.declared = n
		} else {
			w.header.Del("Content-Length")
		}
	}
}

func (w *response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.noBody {
		if w.req.Method == http.MethodHead {
			w.written += int64(len(p))
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.declared >= 0 && w.written+int64(len(p)) > w.declared {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed {
		if len(w.pending)+len(p) <= cap(w.pending) {
			w.pending = append(w.pending, p...)
			return len(p), nil
		}
		w.commit(false)
	}
	w.writeBody(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func (w *response) writeBody(p []byte) {
	if len(p) == 0 || w.err != nil {
		return
	}
	bw := w.c.bw
	if w.chunking {
		var size [16]byte
		bw.Write(strconv.AppendInt(size[:0], int64(len(p)), 16))
		bw.WriteString("\r\n")
	}
	bw.Write(p)
	if w.chunking {
		bw.WriteString("\r\n")
	}
	if _, err := bw.Write(nil); err != nil {
		w.err = err
	}
}

// commit writes the head and the body held so far; final: the handler has returned, so the held
// bytes are the whole body and give its Content-Length.
func (w *response) commit(final bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.committed = true
	h, req := w.header, w.req
	_, hasType := h["Content-Type"]
	if te := h.Get("Transfer-Encoding"); te != "" {
		h.Del("Transfer-Encoding") // the engine frames the body itself
	}
	switch {
	case w.declared >= 0:
	case w.noBody:
		if final && req.Method == http.MethodHead && w.written > 0 {
			h.Set("Content-Length", strconv.FormatInt(w.written, 10))
		}
	case final:
		h.Set("Content-Length", strconv.Itoa(len(w.pending)))
	case req.ProtoAtLeast(1, 1):
		w.chunking = true
	default:
		w.closeAfter = true // HTTP/1.0 without a length: the end is the connection's
	}
	if !hasType && !w.noBody && len(w.pending) > 0 {
		h.Set("Content-Type", http.DetectContentType(w.pending))
	}
	if hasToken(h.Get("Connection"), "close") || req.Close || w.c.s.draining.Load() {
		w.closeAfter = true
	}
	switch {
	case w.closeAfter && req.ProtoAtLeast(1, 1):
		h.Set("Connection", "close")
	case w.closeAfter:
		h.Del("Connection")
	case !req.ProtoAtLeast(1, 1):
		h.Set("Connection", "keep-alive")
	}
	bw := w.c.bw
	w.statusLine(w.status)
	if _, ok := h["Date"]; !ok {
		bw.WriteString("Date: ")
		bw.Write(w.c.s.date())
		bw.WriteString("\r\n")
	}
	w.headers(h)
	if w.chunking {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
	if !w.noBody {
		w.writeBody(w.pending)
	}
	w.pending = nil
	if _, err := bw.Write(nil); err != nil {
		w.err = err
	}
}

func (w *response) statusLine(code int) {
	bw := w.c.bw
	var num [8]byte
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(num[:0], int64(code), 10))
	bw.WriteByte(' ')
	bw.WriteString(http.StatusText(code))
	bw.WriteString("\r\n")
}

// headers writes h sorted by name, as net/http does: names it would not send are left out, and a
// CR or LF in a value is sent as a space.
func (w *response) headers(h http.Header) {
	bw := w.c.bw
	keys := w.c.keys[:0]
	for k := range h {
		if !strings.HasPrefix(k, http.TrailerPrefix) && httpguts.ValidHeaderFieldName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			writeValue(bw, v)
			bw.WriteString("\r\n")
		}
	}
	clear(keys)
	w.c.keys = keys[:0]
}

func writeValue(bw *bufio.Writer, v string) {
	for {
		i := strings.IndexAny(v, "\r\n")
		if i < 0 {
			bw.WriteString(strings.TrimSpace(v))
			return
		}
		bw.WriteString(v[:i])
		bw.WriteByte(' ')
		v = v[i+1:]
	}
}

// interim writes a 1xx answer's head at once (103 Early Hints, a cell's 100 Continue).
func (w *response) interim(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.committed {
		return
	}
	if code == http.StatusContinue && w.body != nil {
		w.body.mu.Lock()
		w.body.expect100 = false // sent now: the body's first read must not send it again
		w.body.mu.Unlock()
	}
	w.statusLine(code)
	w.headers(w.header)
	w.c.bw.WriteString("\r\n")
	if err := w.c.bw.Flush(); err != nil {
		w.err = err
	}
}

// writeContinue answers a client waiting for 100 Continue, the first time its body is read.
func (w *response) writeContinue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.committed || w.hijacked {
		return
	}
	w.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	if err := w.c.bw.Flush(); err != nil {
		w.err = err
	}
}

// finish ends the answer after the handler returned; false: the connection must close (an
// answer that could not be framed, fell short of its length, or failed to go out).
func (w *response) finish() bool {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	bw := w.c.bw
	if w.chunking && w.err == nil {
		bw.WriteString("0\r\n")
		w.trailers()
		bw.WriteString("\r\n")
	}
	if w.declared >= 0 && w.written != w.declared && !w.noBody {
		w.closeAfter = true
	}
	if err := bw.Flush(); err != nil {
		w.err = err
	}
	return !w.closeAfter && w.err == nil
}

// trailers writes the trailers the handler announced (Trailer) or set (http.TrailerPrefix).
func (w *response) trailers() {
	t := http.Header{}
	for _, names := range w.header["Trailer"] {
		for name := range strings.SplitSeq(names, ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			if vv, ok := w.header[name]; ok {
				t[name] = vv
			}
		}
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			t[http.CanonicalHeaderKey(name)] = vv
		}
	}
	if len(t) > 0 {
		w.headers(t)
	}
}

func (w *response) Flush() { _ = w.FlushError() }

func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	if err := w.c.bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// Hijack hands the connection over, with the bytes read of it and not yet served; the engine
// forgets it.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	c := w.c
	c.watcher.disarm()
	w.mu.Lock()
	w.hijacked = true
	w.mu.Unlock()
	if w.committed {
		if err := c.bw.Flush(); err != nil {
			return nil, nil, err
		}
	}
	n := c.br.Buffered()
	var br *bufio.Reader
	if n > 0 {
		read, _ := c.br.Peek(n)
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(read)), c.rwc), max(n, 4<<10))
		br.Peek(n) // the bytes read so far are buffered, where the hijacker looks for them
	} else {
		br = bufio.NewReader(c.rwc)
	}
	c.rwc.SetDeadline(time.Time{})
	c.s.remove(c)
	return c.rwc, bufio.NewReadWriter(br, bufio.NewWriter(c.rwc)), nil
}

func (w *response) SetReadDeadline(t time.Time) error  { return w.c.rwc.SetReadDeadline(t) }
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

// EnableFullDuplex: the engine lets a handler read the body after its answer began anyway.
func (w *response) EnableFullDuplex() error { return nil }
