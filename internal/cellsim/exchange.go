package cellsim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Route names, as they appear in Record.Route.
const (
	routeRegister          = "runners"
	routeVerify            = "runners/verify"
	routeUnregister        = "runners:delete"
	routeUnregisterManager = "runners/managers:delete"
	routeResetToken        = "runners/reset_authentication_token"
	routeDiscovery         = "runners/router/discovery"
	routeJobRequest        = "jobs/request"
	routeUpdateJob         = "jobs/:id"
	routeTrace             = "jobs/:id/trace"
	routeUploadArtifacts   = "jobs/:id/artifacts:upload"
	routeDownloadArtifacts = "jobs/:id/artifacts:download"
	routeUnknown           = "unknown"
)

// statusClientClosed is what a canceled request is recorded with (nginx's 499): nobody is
// left to receive an answer.
const statusClientClosed = 499

// exchange is one request being served: the request, its hashed body and its record.
type exchange struct {
	r    *http.Request
	body *hashingReader
	rec  Record
}

// response is what a route answers; serve writes it after the request is recorded, so a
// client that has its answer can rely on the record being there.
type response struct {
	status int
	header http.Header
	body   []byte
}

func jsonResponse(status int, v any) response {
	b, err := json.Marshal(v)
	if err != nil {
		return textResponse(http.StatusInternalServerError, err.Error())
	}
	return response{status: status, header: http.Header{"Content-Type": {"application/json"}}, body: b}
}

func textResponse(status int, s string) response {
	return response{status: status, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte(s)}
}

// messageResponse is how the GitLab API words its errors: {"message":"403 Forbidden"}.
func messageResponse(status int) response {
	return jsonResponse(status, map[string]string{"message": strconv.Itoa(status) + " " + http.StatusText(status)})
}

func emptyResponse(status int) response { return response{status: status, header: http.Header{}} }

func (r response) with(key, value string) response {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set(key, value)
	return r
}

func canceledResponse() response { return response{status: statusClientClosed} }

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
