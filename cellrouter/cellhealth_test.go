package cellrouter

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/wire"
)

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

// Only a request that never reached an address and has no body goes to another address. A
// failed connect ejects at once; a reset after sending is one gateway failure, which alone
// ejects nothing; a 5xx is an answer and ejects nothing.
func TestAddressTransportRetries(t *testing.T) {
	h, err := discovery.NewHealth(discovery.HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, method, path, body string
		dead, reset              bool
		sent                     string // hosts that saw the request
		ejectedBy                string // what ejected the first address: "" (nothing), connect, gateway
		gatewayFailures          int
		fails                    bool
	}{
		{name: "GET to a dead address goes to the live one", method: "GET", path: "/api/v4/jobs/1", dead: true, sent: "live:1", ejectedBy: "connect"},
		{name: "body never sent twice", method: "PUT", path: "/api/v4/jobs/1", body: "{}", dead: true, sent: "", ejectedBy: "connect", fails: true},
		{name: "jobs/request never sent twice", method: "POST", path: wire.JobsRequestPath, body: `{"token":"x"}`, dead: true, sent: "", ejectedBy: "connect", fails: true},
		{name: "reset after sending: a gateway failure, not retried, not ejected", method: "GET", path: "/api/v4/jobs/1", reset: true, sent: "first:1", gatewayFailures: 1, fails: true},
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
			if s := c.State()[0]; s.EjectedBy != tt.ejectedBy || s.GatewayFailures != tt.gatewayFailures {
				t.Errorf("first address: ejected by %q after %d gateway failures, want %q after %d", s.EjectedBy, s.GatewayFailures, tt.ejectedBy, tt.gatewayFailures)
			}
			if tt.fails && !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("error %v, want the connection failure itself", err)
			}
		})
	}
}

// Resets after sending eject an address at the DefaultGatewayFailures-th in a row; a 502 answer
// between them ends the streak.
func TestAddressTransportGatewayFailures(t *testing.T) {
	h, err := discovery.NewHealth(discovery.HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := h.Cell(1, []*url.URL{{Scheme: "http", Host: "first:1"}, {Scheme: "http", Host: "live:1"}}, nil)
	fake := &fakeAddresses{live: map[string]bool{"live:1": true, "first:1": true}, reset: map[string]bool{}}
	tr := &addressTransport{base: fake, cell: c, addr: c.Addrs[0]}
	send := func(reset bool) {
		fake.mu.Lock()
		fake.reset["first:1"] = reset
		fake.mu.Unlock()
		resp, err := tr.RoundTrip(newReq(t, "GET", "http://first:1/api/v4/jobs/1", nil))
		if (err != nil) != reset {
			t.Fatalf("RoundTrip: %v, %v; want a failure: %v", resp, err, reset)
		}
	}
	for range discovery.DefaultGatewayFailures - 1 {
		send(true)
	}
	send(false) // a 502: an answer
	for range discovery.DefaultGatewayFailures - 1 {
		send(true)
	}
	if s := c.State()[0]; s.EjectedBy != "" {
		t.Fatalf("ejected by %s with an answer between the resets", s.EjectedBy)
	}
	send(true)
	if s := c.State()[0]; s.EjectedBy != "gateway" {
		t.Errorf("after %d resets in a row: ejected by %q, want gateway", discovery.DefaultGatewayFailures, s.EjectedBy)
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
