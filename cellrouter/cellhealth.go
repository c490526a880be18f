package cellrouter

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
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/wire"
)

// addressTransport carries a cell's requests to one of its addresses and tells the cell's health
// what became of them (discovery/health_passive.go). A connect refused or timed out ejects the
// address at once; a reset or EOF after the request went out is a gateway failure, which ejects
// only when enough come in a row; an answer of any status ends that streak. A request that never
// reached the address and has no body goes to another address of the same cell, so a
// jobs/request or any request with a body is never sent twice.
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
		if req.Context().Err() != nil {
			return nil, err
		}
		if !neverReached(err) {
			if gatewayFailure(err) {
				t.cell.GatewayFailed(addr)
			}
			return nil, err
		}
		t.cell.ConnectFailed(addr)
		if (req.Body != nil && req.Body != http.NoBody) || req.URL.Path == wire.JobsRequestPath {
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

// gatewayFailure is the connection ending after the request went out, before any answer: a
// 5xx is an answer.
func gatewayFailure(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// neverReached: no connection was made (refused, or the connect timed out), so the cell saw
// nothing of the request.
func neverReached(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// cellUnavailable answers a request for a cell whose checks hold every address down: 503 at
// once, with Retry-After the seconds until the next check.
func (p *Router) cellUnavailable(w *hop.Record, t *target) {
	secs := int((t.health.RetryAfter() + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	hop.Error(w, fmt.Errorf("cell %d: %w", t.cell.ID, hop.ErrCellUnavailable))
}

// CellHealth is the health of this router's cells, for discovery.Health.Use when it is put in
// force.
func (p *Router) CellHealth() []*discovery.CellHealth {
	out := make([]*discovery.CellHealth, 0, len(p.targets))
	for _, t := range p.targets {
		out = append(out, t.health)
	}
	return out
}
