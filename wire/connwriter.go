package wire

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"time"
)

// connWriter writes a parked poll's answer on the client connection as net/http's server would
// for an HTTP/1.1 request: the status line, the headers with a Date, the body with the cell's
// Content-Length or chunked. What it cannot frame exactly closes the connection after.
type connWriter struct {
	bw          *bufio.Writer
	header      http.Header
	wroteHeader bool
	bodyAllowed bool
	chunked     bool
	declared    int64 // Content-Length sent; -1: none
	written     int64
	close       bool // Connection: close, and the connection closed after
	err         error
	sock        sockWriter
}

// sockWriter counts what reached the socket, so that an answer none of which did can still be
// replaced by an error.
type sockWriter struct {
	c    net.Conn
	sent int64
}

func (s *sockWriter) Write(b []byte) (int, error) {
	n, err := s.c.Write(b)
	s.sent += int64(n)
	return n, err
}

func newConnWriter(c net.Conn, closeAfter bool) *connWriter {
	w := &connWriter{header: http.Header{}, declared: -1, close: closeAfter, sock: sockWriter{c: c}}
	w.bw = bufio.NewWriterSize(&w.sock, 4<<10)
	return w
}

// discard drops an answer none of whose bytes reached the client, for an error to be written
// instead (and the connection closed after it); false when some did.
func (w *connWriter) discard() bool {
	if w.sock.sent > 0 || w.err != nil {
		return false
	}
	w.bw.Reset(&w.sock)
	*w = connWriter{bw: w.bw, header: http.Header{}, declared: -1, close: true, sock: w.sock}
	return true
}

func (w *connWriter) Header() http.Header { return w.header }

func (w *connWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		return // informational answers are not passed on from a parked poll
	}
	w.wroteHeader = true
	h := w.header
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{time.Now().UTC().Format(http.TimeFormat)}
	}
	w.bodyAllowed = code != http.StatusNoContent && code != http.StatusNotModified
	delete(h, "Transfer-Encoding")
	if cl := h.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.declared = n
		} else {
			delete(h, "Content-Length")
			w.close = true
		}
	}
	if w.bodyAllowed && w.declared < 0 {
		w.chunked = true
		h["Transfer-Encoding"] = []string{"chunked"}
	}
	if w.close {
		h["Connection"] = []string{"close"}
	}
	w.bw.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\n")
	h.Write(w.bw)
	_, w.err = w.bw.WriteString("\r\n")
}

func (w *connWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.err != nil:
		return 0, w.err
	case !w.bodyAllowed:
		return 0, http.ErrBodyNotAllowed
	case w.declared >= 0 && w.written+int64(len(b)) > w.declared:
		w.close = true
		return 0, http.ErrContentLength
	}
	if w.chunked && len(b) > 0 {
		w.bw.WriteString(strconv.FormatInt(int64(len(b)), 16) + "\r\n")
	}
	n, err := w.bw.Write(b)
	if w.chunked && err == nil && len(b) > 0 {
		_, err = w.bw.WriteString("\r\n")
	}
	w.written += int64(n)
	w.err = err
	return n, err
}

func (w *connWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err == nil {
		w.err = w.bw.Flush()
	}
}

// finish ends the answer; false means the client did not get it whole.
func (w *connWriter) finish() bool {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.chunked && w.err == nil {
		_, w.err = w.bw.WriteString("0\r\n\r\n")
	}
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err == nil
}

// keepAlive says whether the connection may carry the runner's next request.
func (w *connWriter) keepAlive() bool {
	return !w.close && w.err == nil && (w.declared < 0 || w.written == w.declared || !w.bodyAllowed)
}
