package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"gitlab.com/edge/edge/discovery"
)

// ErrCellUnavailable is a cell with no usable address: answered at once, without a dial.
var ErrCellUnavailable = errors.New("no healthy address")

// addressTransport carries a cell's requests to one of its addresses. A connection failure
// (refused, connect timeout, reset before any answer) ejects the address; a request that never
// reached it and has no body goes to another usable address of the same cell, so a jobs/request
// or any request with a body is never sent twice.
type addressTransport struct {
	base http.RoundTripper
	cell *discovery.CellHealth
	addr *discovery.Address
}

func (t *addressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	addr := t.addr
	resp, err := t.base.RoundTrip(req)
	var tried []*discovery.Address
	for {
		if err == nil {
			addr.Answered()
			return resp, nil
		}
		if req.Context().Err() != nil || !connectionFailure(err) {
			return nil, err
		}
		t.cell.Eject(addr)
		if !neverReached(err) || (req.Body != nil && req.Body != http.NoBody) || req.URL.Path == jobsRequestPath {
			return nil, err
		}
		tried = append(tried, addr)
		next := t.cell.Pick(tried...)
		if next == nil {
			return nil, err
		}
		addr = next
		req.URL.Scheme, req.URL.Host = addr.URL.Scheme, addr.URL.Host
		addr.Begin()
		resp, err = t.base.RoundTrip(req)
		addr.End()
	}
}

// connectionFailure is a failure of the connection itself, not an answer: a 5xx is an answer.
func connectionFailure(err error) bool {
	return neverReached(err) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// neverReached: no connection was made, so the cell saw nothing of the request.
func neverReached(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// cellUnavailable answers a request for a cell none of whose addresses is usable: 503 at once,
// with Retry-After the seconds until one may be.
func (p *Proxy) cellUnavailable(w *recorder, t *target) {
	secs := int((t.health.RetryAfter() + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeErr(w, fmt.Errorf("cell %d: %w", t.cell.ID, ErrCellUnavailable))
}

// CellHealth is the health of this proxy's cells, for discovery.Health.Use when it is put in
// force.
func (p *Proxy) CellHealth() []*discovery.CellHealth {
	out := make([]*discovery.CellHealth, 0, len(p.targets))
	for _, t := range p.targets {
		out = append(out, t.health)
	}
	return out
}
