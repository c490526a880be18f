package proxy

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"gitlab.com/edge/edge/discovery"
)

// A dead cell's address is ejected by the first failed connection; the next request is answered
// 503 cell_unavailable with Retry-After, and the cell is not dialled again.
func TestDeadCellAnswered503WithoutDial(t *testing.T) {
	f := newFixture(t, nil)
	f.cells[1].srv.Close()
	ask := func() (*http.Response, []byte) {
		return do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", routable(t, 2)))
	}
	if resp, body := ask(); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("first request: %d %s, want 502 (it found the cell dead)", resp.StatusCode, body)
	}
	for range 5 {
		resp, body := ask()
		var e struct{ Error, Message string }
		_ = json.Unmarshal(body, &e)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || e.Error != "cell_unavailable" || !strings.Contains(e.Message, "cell 2") || err != nil || secs < 1 {
			t.Fatalf("got %d %s Retry-After %q, want 503 cell_unavailable naming cell 2 with Retry-After", resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	if n := f.proxy.metrics.upstreamErrors.WithLabelValues("2", "connection_refused"); counterValue(t, n) != 1 {
		t.Errorf("connection refused %v times, want once: the ejected cell was dialled again", counterValue(t, n))
	}
}

// fakeAddresses answers for the hosts in live and fails to connect to any other.
type fakeAddresses struct {
	mu    sync.Mutex
	live  map[string]bool
	reset map[string]bool // hosts that reset the connection after the request went out
	sent  []string        // host of every request that reached an address
}

func (f *fakeAddresses) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.reset[req.URL.Host]:
		f.sent = append(f.sent, req.URL.Host)
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	case !f.live[req.URL.Host]:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	f.sent = append(f.sent, req.URL.Host)
	return &http.Response{StatusCode: http.StatusBadGateway, Body: http.NoBody, Request: req}, nil
}

// Only a request that never reached an address and has no body goes to another address; a 5xx
// is an answer and ejects nothing.
func TestAddressTransportRetries(t *testing.T) {
	h, err := discovery.NewHealth(discovery.HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, method, path, body string
		dead, reset              bool
		sent                     string // hosts that saw the request
		ejected, fails           bool
	}{
		{name: "GET to a dead address goes to the live one", method: "GET", path: "/api/v4/jobs/1", dead: true, sent: "live:1", ejected: true},
		{name: "body never sent twice", method: "PUT", path: "/api/v4/jobs/1", body: "{}", dead: true, sent: "", ejected: true, fails: true},
		{name: "jobs/request never sent twice", method: "POST", path: jobsRequestPath, body: `{"token":"x"}`, dead: true, sent: "", ejected: true, fails: true},
		{name: "reset after sending: ejected, not retried", method: "GET", path: "/api/v4/jobs/1", reset: true, sent: "first:1", ejected: true, fails: true},
		{name: "5xx is an answer", method: "GET", path: "/api/v4/jobs/1", sent: "first:1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := h.Cell(uint64(len(tt.name)), []*url.URL{{Scheme: "http", Host: "first:1"}, {Scheme: "http", Host: "live:1"}}, nil)
			fake := &fakeAddresses{live: map[string]bool{"live:1": true, "first:1": !tt.dead}, reset: map[string]bool{"first:1": tt.reset}}
			tr := &addressTransport{base: fake, cell: c, addr: c.Addrs[0]}
			req := newReq(t, tt.method, "http://first:1"+tt.path, nil)
			if tt.body != "" {
				req = newReq(t, tt.method, "http://first:1"+tt.path, strings.NewReader(tt.body))
			}
			resp, err := tr.RoundTrip(req)
			if (err != nil) != tt.fails {
				t.Fatalf("RoundTrip: %v, %v; want failure %v", resp, err, tt.fails)
			}
			if got := strings.Join(fake.sent, ","); got != tt.sent {
				t.Errorf("reached %q, want %q", got, tt.sent)
			}
			if ejected := c.Pick(c.Addrs[1]) == nil; ejected != tt.ejected {
				t.Errorf("first address ejected: %v, want %v", ejected, tt.ejected)
			}
			if tt.fails && !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("error %v, want the connection failure itself", err)
			}
		})
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
