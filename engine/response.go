package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is a request's http.ResponseWriter, written to the connection byte for byte as
// net/http's server writes one: the handler's writes go through a 2 KiB buffer, so a small answer
// gets its Content-Length and a longer one is chunked (closed after, in HTTP/1.0); Date, a
// sniffed Content-Type and Connection are added in net/http's order; the request body is read
// or discarded as net/http does before the head goes out (TestSameBytesAsNetHTTP holds this).
type response struct {
	c            *conn
	req          *http.Request
	body         *body       // nil: no body
	header       http.Header // the handler's
	sent         http.Header // the header as it was at WriteHeader: what the head says
	calledHeader bool
	trailers     []string // declared in the head's Trailer
	status       int
	wroteHeader  bool
	hijacked     bool
	handlerDone  bool
	fullDuplex   bool
	declared     int64 // the answer's Content-Length; -1: none
	written      int64
	chunking     bool
	closeAfter   bool
	// lingerClose: the connection closes with some of the body unread, which must not reset it
	// before the client has read the answer.
	lingerClose bool
	err         error         // sticky: the connection failed
	w           *bufio.Writer // the handler's writes, in front of the head and framing
	chunks      chunkWriter
	extra       extraHeader // what commit adds to the head

	mu        sync.Mutex // committed, and the connection's writer before it: a 100 Continue
	committed bool       // the head is written
}

func (w *response) reset(c *conn, r *http.Request) {
	b, _ := r.Body.(*body)
	// The last request's header map serves again: its answer is written and its handler
	// returned (a hijacked connection's is never reused).
	h := w.header
	if h == nil {
		h = make(http.Header)
	} else {
		clear(h)
	}
	*w = response{c: c, req: r, body: b, header: h, declared: -1, w: w.w}
	w.chunks.res = w
	if w.w == nil {
		if bw, ok := c.s.lengthBuffers.Get().(*bufio.Writer); ok {
			w.w = bw
		} else {
			w.w = bufio.NewWriterSize(&w.chunks, bufferBeforeChunking)
		}
	}
	w.w.Reset(&w.chunks)
}

// bufferBeforeChunking is net/http's: an answer this short, written whole, gets a length.
const bufferBeforeChunking = 2048

func (w *response) Header() http.Header {
	w.calledHeader = true
	return w.header
}

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
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.declared = n
		} else {
			w.header.Del("Content-Length")
		}
	}
	w.sent = w.header
	if w.headKnown() {
		// Nothing the body or the handler's end could change: the head is written now, and the
		// header needs no copy.
		w.commit(nil)
		return
	}
	if w.calledHeader {
		w.sent = w.header.Clone() // what the handler sets from now on is not in the head
	}
}

// headKnown: the head depends on nothing but the header as it is: the body's length is declared
// (or there is none), its type given (or nothing to sniff), and the request's body, if any, read
// to its end (nothing to discard, no 100 Continue to send).
func (w *response) headKnown() bool {
	if bodyAllowed(w.status) {
		if w.declared < 0 {
			return false
		}
		if _, typed := w.header["Content-Type"]; !typed && w.declared > 0 && w.header.Get("Content-Encoding") == "" {
			return false
		}
	}
	return w.req.ContentLength == 0 || w.body != nil && w.body.sawEOF.Load()
}

func (w *response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	w.noContinue()
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.declared >= 0 && w.written > w.declared {
		return 0, http.ErrContentLength
	}
	return w.w.Write(p)
}

func bodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// chunkWriter frames what the handler's buffer lets through: the head before the first bytes,
// then the bytes, chunked or not.
type chunkWriter struct{ res *response }

func (cw *chunkWriter) Write(p []byte) (int, error) {
	w := cw.res
	if !w.committed {
		w.commit(p)
	}
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	bw := w.c.bw
	if w.chunking {
		var size [16]byte
		bw.Write(strconv.AppendInt(size[:0], int64(len(p)), 16))
		bw.WriteString("\r\n")
	}
	n, err := bw.Write(p)
	if w.chunking && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	if err != nil {
		w.fail(err)
	}
	return n, err
}

// fail notes a write that failed: the connection is done.
func (w *response) fail(err error) {
	if w.err == nil {
		w.err = err
		w.c.rwc.Close()
	}
}

// commit writes the head, p being the body's first bytes (all of it once the handler is done).
func (w *response) commit(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.committed = true
	h, req := w.sent, w.req
	isHEAD := req.Method == http.MethodHead
	keepAlives := !w.c.s.draining.Load()
	trailers := false
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			trailers = true
		}
	}
	for _, v := range h["Trailer"] {
		trailers = true
		for name := range strings.SplitSeq(v, ",") {
			if name = http.CanonicalHeaderKey(textproto.TrimString(name)); name != "" && httpguts.ValidTrailerHeader(name) {
				w.trailers = append(w.trailers, name)
			}
		}
	}
	te := h.Get("Transfer-Encoding")
	hasTE := te != ""
	extra := &w.extra
	*extra = extraHeader{}
	if w.handlerDone && !trailers && !hasTE && bodyAllowed(w.status) && !has(h, "Content-Length") && (!isHEAD || len(p) > 0) {
		w.declared = int64(len(p))
		extra.contentLength = strconv.AppendInt(extra.lengthBuf[:0], int64(len(p)), 10)
	}
	hasCL := w.declared != -1
	wants10KeepAlive := req.ProtoMajor == 1 && req.ProtoMinor == 0 && httpguts.HeaderValuesContainsToken(req.Header["Connection"], "keep-alive")
	if wants10KeepAlive && (isHEAD || hasCL || !bodyAllowed(w.status)) {
		if _, set := h["Connection"]; !set {
			extra.connection = "keep-alive"
		}
	} else if !req.ProtoAtLeast(1, 1) || req.Close || httpguts.HeaderValuesContainsToken(req.Header["Connection"], "close") {
		w.closeAfter = true
	}
	if h.Get("Connection") == "close" || !keepAlives {
		w.closeAfter = true
	}
	if b := w.body; b != nil && b.expecting && !b.sawEOF.Load() {
		w.closeAfter = true // the client waited for a 100 Continue it never got, or its body is unread
	}
	if req.ContentLength != 0 && !w.closeAfter && !w.fullDuplex && w.body != nil {
		switch w.body.discard(w.c.s.readHeaderTimeout) {
		case discardTooBig:
			w.closeAfter, w.lingerClose = true, true
			h.Del("Connection")
			extra.connection = "close"
		case discardFailed:
			w.closeAfter = true
		}
	}
	if bodyAllowed(w.status) {
		_, haveType := h["Content-Type"]
		if h.Get("Content-Encoding") == "" && !haveType && !hasTE && len(p) > 0 {
			extra.contentType = http.DetectContentType(p)
		}
	} else {
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
		if w.status == http.StatusNotModified {
			h.Del("Content-Type")
		}
	}
	if !has(h, "Date") {
		extra.date = w.c.s.date()
	}
	if hasCL && hasTE && te != "identity" {
		h.Del("Content-Length")
		hasCL = false
	}
	switch {
	case isHEAD || !bodyAllowed(w.status):
		h.Del("Transfer-Encoding")
	case hasCL:
		h.Del("Transfer-Encoding")
	case req.ProtoAtLeast(1, 1) && te == "identity":
		w.closeAfter = true
		h.Del("Transfer-Encoding")
	case req.ProtoAtLeast(1, 1):
		w.chunking = true
		extra.transferEncoding = "chunked"
		if te == "chunked" {
			h.Del("Transfer-Encoding")
		}
	default:
		w.closeAfter = true
		h.Del("Transfer-Encoding")
	}
	if w.chunking {
		h.Del("Content-Length")
	}
	if w.closeAfter && (!keepAlives || !httpguts.HeaderValuesContainsToken(h["Connection"], "close")) && w.status != http.StatusSwitchingProtocols {
		h.Del("Connection")
		if req.ProtoAtLeast(1, 1) {
			extra.connection = "close"
		}
	}
	w.statusLine(w.status)
	w.headers(h, false)
	extra.write(w.c.bw)
	w.c.bw.WriteString("\r\n")
}

func has(h http.Header, key string) bool {
	_, ok := h[key]
	return ok
}

// extraHeader is what the engine adds to the handler's header, written after it in net/http's
// order.
type extraHeader struct {
	date, contentLength                       []byte
	contentType, connection, transferEncoding string
	lengthBuf                                 [20]byte
}

func (e *extraHeader) write(bw *bufio.Writer) {
	if e.date != nil {
		bw.WriteString("Date: ")
		bw.Write(e.date)
		bw.WriteString("\r\n")
	}
	if e.contentLength != nil {
		bw.WriteString("Content-Length: ")
		bw.Write(e.contentLength)
		bw.WriteString("\r\n")
	}
	for _, kv := range [...][2]string{{"Content-Type", e.contentType}, {"Connection", e.connection}, {"Transfer-Encoding", e.transferEncoding}} {
		if kv[1] != "" {
			bw.WriteString(kv[0])
			bw.WriteString(": ")
			bw.WriteString(kv[1])
			bw.WriteString("\r\n")
		}
	}
}

func (w *response) statusLine(code int) {
	bw := w.c.bw
	if w.req.ProtoAtLeast(1, 1) {
		bw.WriteString("HTTP/1.1 ")
	} else {
		bw.WriteString("HTTP/1.0 ")
	}
	text := http.StatusText(code)
	if text == "" {
		fmt.Fprintf(bw, "%03d status code %d\r\n", code, code)
		return
	}
	bw.WriteByte(byte('0' + code/100))
	bw.WriteByte(byte('0' + code/10%10))
	bw.WriteByte(byte('0' + code%10))
	bw.WriteByte(' ')
	bw.WriteString(text)
	bw.WriteString("\r\n")
}

// headers writes h sorted by name, as net/http does: names it would not send are left out, a CR
// or LF in a value is sent as a space; noBody leaves out the body's framing (a 1xx answer).
func (w *response) headers(h http.Header, noBody bool) {
	bw := w.c.bw
	keys := w.c.keys[:0]
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		if noBody && (k == "Content-Length" || k == "Transfer-Encoding") {
			continue
		}
		keys = append(keys, k)
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

// writeValue writes a header value as net/http does: CR and LF become spaces, and the value is
// trimmed of the whitespace around it.
func writeValue(bw *bufio.Writer, v string) {
	if strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, '\n') >= 0 { // two SIMD scans; ContainsAny loops per byte
		v = strings.NewReplacer("\r\n", "  ", "\r", " ", "\n", " ").Replace(v)
	}
	bw.WriteString(textproto.TrimString(v))
}

// interim writes a 1xx answer's head at once (103 Early Hints, a cell's 100 Continue).
func (w *response) interim(code int) {
	if code == http.StatusContinue {
		w.noContinue()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statusLine(code)
	w.headers(w.header, true)
	w.c.bw.WriteString("\r\n")
	if err := w.c.bw.Flush(); err != nil {
		w.fail(err)
	}
}

// noContinue: the answer has begun, so a body read must no longer send 100 Continue.
func (w *response) noContinue() {
	if b := w.body; b != nil && b.expect100.Load() {
		w.mu.Lock()
		b.expect100.Store(false)
		w.mu.Unlock()
	}
}

// writeContinue answers a client waiting for 100 Continue, the first time its body is read.
func (w *response) writeContinue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c == nil || w.committed || w.hijacked || !w.body.expect100.Swap(false) {
		return
	}
	w.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	if err := w.c.bw.Flush(); err != nil {
		w.fail(err)
	}
}

// finish ends the answer after the handler returned; false: the connection must close (an
// answer that could not be framed, fell short of its length, or failed to go out).
func (w *response) finish() bool {
	w.handlerDone = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.w.Flush()
	if !w.committed {
		w.commit(nil)
	}
	bw := w.c.bw
	if w.chunking {
		bw.WriteString("0\r\n")
		if t := w.finalTrailers(); t != nil {
			w.headers(t, false)
		}
		bw.WriteString("\r\n")
	}
	if err := bw.Flush(); err != nil {
		w.fail(err)
	}
	if b := w.body; b != nil && b.closedEarly() {
		w.lingerClose = true
		return false
	}
	short := w.req.Method != http.MethodHead && w.declared != -1 && bodyAllowed(w.status) && w.declared != w.written
	return !w.closeAfter && !short && w.err == nil
}

// finalTrailers are the trailers the handler announced (Trailer) or set (http.TrailerPrefix).
func (w *response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = http.Header{}
			}
			t[name] = vv
		}
	}
	for _, name := range w.trailers {
		if t == nil {
			t = http.Header{}
		}
		for _, v := range w.header[name] {
			t.Add(name, v)
		}
	}
	return t
}

func (w *response) Flush() { _ = w.FlushError() }

func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	if !w.committed {
		w.commit(nil)
	}
	if err := w.c.bw.Flush(); err != nil {
		w.fail(err)
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
	if w.wroteHeader {
		w.w.Flush()
		if !w.committed {
			w.commit(nil)
		}
		if err := c.bw.Flush(); err != nil {
			return nil, nil, err
		}
	}
	w.mu.Lock()
	w.hijacked = true
	w.mu.Unlock()
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

// EnableFullDuplex lets the handler read the body after its answer began, instead of the rest
// being read and discarded before the head goes out.
func (w *response) EnableFullDuplex() error {
	w.fullDuplex = true
	return nil
}
