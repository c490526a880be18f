package cellsim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strings"
	"time"
)

// Routes the cell serves, as Record.Route names them.
const (
	RouteRegister          = "runners"
	RouteVerify            = "runners/verify"
	RouteUnregister        = "runners:delete"
	RouteUnregisterManager = "runners/managers:delete"
	RouteResetToken        = "runners/reset_authentication_token"
	RouteDiscovery         = "runners/router/discovery"
	RouteJobRequest        = "jobs/request"
	RouteUpdateJob         = "jobs/:id"
	RouteTrace             = "jobs/:id/trace"
	RouteUploadArtifacts   = "jobs/:id/artifacts:upload"
	RouteDownloadArtifacts = "jobs/:id/artifacts:download"
	RouteUnknown           = "unknown"
)

// exchange is one request being served: the request, its hashed body and its record.
type exchange struct {
	r    *http.Request
	body *hashingReader
	rec  Record
}

// serve wraps a route: run it, read what is left of the body (hashing every byte), stall if
// asked to, record, then answer.
func (c *Cell) serve(route string, h func(*exchange) response) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ex := &exchange{
			r:    r,
			body: &hashingReader{r: r.Body, h: sha256.New()},
			rec: Record{
				Cell:             c.opts.CellID,
				Route:            route,
				Method:           r.Method,
				Path:             r.URL.Path,
				Query:            r.URL.RawQuery,
				ContentLength:    r.ContentLength,
				TransferEncoding: append([]string(nil), r.TransferEncoding...),
				Header:           redactedHeader(r.Header),
			},
		}
		c.mu.Lock()
		c.inFlight++
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.inFlight--
			c.mu.Unlock()
		}()
		res := h(ex)
		if _, err := io.Copy(io.Discard, ex.body); err != nil && ex.rec.BodyErr == "" {
			ex.rec.BodyErr = err.Error()
		}
		if res.status != statusClientClosed && !c.stallFor(ex) {
			res = canceledResponse()
		}
		ex.rec.Canceled = res.status == statusClientClosed
		ex.rec.BodyLen = ex.body.n
		ex.rec.BodySHA256 = hex.EncodeToString(ex.body.h.Sum(nil))
		ex.rec.Status = res.status
		c.addRecord(ex.rec)
		c.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", res.status,
			"token_source", ex.rec.TokenSource, "misrouted", ex.rec.Misrouted, "canceled", ex.rec.Canceled)
		if res.status == statusClientClosed {
			return
		}
		for k, vs := range res.header {
			w.Header()[k] = vs
		}
		w.WriteHeader(res.status)
		_, _ = w.Write(res.body)
	}
}

// stallFor waits out SetStall's delay before the answer is written. The body has been read by
// then, so the server notices a peer that goes away. It reports false when the request was
// canceled meanwhile.
func (c *Cell) stallFor(ex *exchange) bool {
	c.mu.Lock()
	d := c.stall
	c.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ex.r.Context().Done():
		ex.rec.Canceled = true
		return false
	}
}

// readBody reads the body up to limit bytes. tooBig is true when there was more.
func (ex *exchange) readBody(limit int64) (b []byte, tooBig bool, err error) {
	b, err = io.ReadAll(io.LimitReader(ex.body, limit+1))
	if err != nil {
		ex.rec.BodyErr = err.Error()
		if ex.r.Context().Err() != nil {
			ex.rec.Canceled = true
		}
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}

// failedRead answers a body that could not be read.
func (ex *exchange) failedRead() response {
	if ex.rec.Canceled {
		return canceledResponse()
	}
	return messageResponse(http.StatusBadRequest)
}

type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	if h.r == nil {
		return 0, io.EOF
	}
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if errors.Is(err, http.ErrBodyReadAfterClose) {
		err = io.EOF
	}
	return n, err
}

func redactedHeader(h http.Header) http.Header {
	out := h.Clone()
	for k, vs := range out {
		switch k {
		case "Runner-Token", "Job-Token", "Private-Token", "Authorization":
			for i := range vs {
				vs[i] = "[redacted]"
			}
		}
	}
	return out
}

func trimBearer(v string) (string, bool) {
	const p = "bearer "
	if len(v) > len(p) && strings.EqualFold(v[:len(p)], p) {
		return strings.TrimSpace(v[len(p):]), true
	}
	return "", false
}
