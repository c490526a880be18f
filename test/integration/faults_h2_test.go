package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFaultMatrixHTTP2: the upstream faults of the matrix for HTTP/2 clients (over TLS, a GET
// and a POST per fault), and a client that resets its stream while the cell holds the request.
// The outcome is the same as over HTTP/1.1, a cut answer being a reset stream.
func TestFaultMatrixHTTP2(t *testing.T) {
	cell := newFaultCell(t)
	pki := writeKubePKI(t, t.TempDir())
	e := faultsEdge(t, cell, &tlsConfig{Static: &staticTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile}})
	m := newMatrix(cell, e.PublicURL, rawFaultPaths[0], watchEdge(e))
	client := httpsClient(t, pki.caFile, true)
	base := strings.Replace(e.PublicURL, "http://", "https://", 1)
	send := func(ctx context.Context, p faultPath, r faultRequest) (*http.Response, error) {
		var body io.Reader
		if p.body != "" {
			body = strings.NewReader(p.body)
		}
		req, _ := http.NewRequestWithContext(ctx, p.method, base+p.target, body)
		req.Header.Set("X-Case", r.id)
		req.Header.Set("X-Request-Id", r.id)
		req.Header.Set("X-Fault", r.fault)
		req.Header.Set("X-Hold", itoa(r.hold))
		if p.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return client.Do(req)
	}
	cases := 0
	for _, p := range rawFaultPaths[:2] {
		for _, up := range upstreamFaults {
			cases++
			t.Run(p.name+"/"+up, func(t *testing.T) {
				n, before, marks := m.begin(t)
				id := fmt.Sprintf("h%d.%s.%s", n, p.name, up)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if up == upStallMidBody {
					ctx, cancel = context.WithTimeout(context.Background(), 2500*time.Millisecond)
				}
				defer cancel()
				var r clientResult
				resp, err := send(ctx, p, faultRequest{id: id, fault: up})
				r.closed = err != nil // the stream reset before an answer
				if err == nil {
					if resp.ProtoMajor != 2 {
						t.Fatalf("answered over HTTP/%d, want 2", resp.ProtoMajor)
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					r = clientResult{status: resp.StatusCode, body: string(b), bodyErr: err, closed: err != nil}
				}
				wantCause := judgeUpstream(t, id, up, r, m.stall)
				cancel()
				m.procs.alive(t)
				if n := m.cell.count(id); n > 1 {
					t.Errorf("the cell saw the request %d times, want at most once", n)
				}
				client.CloseIdleConnections()
				m.noLeak(t, before)
				m.logged(t, id, wantCause, marks)
			})
		}
		cases++
		t.Run(p.name+"/client-reset-held", func(t *testing.T) {
			n, before, marks := m.begin(t)
			id := fmt.Sprintf("h%d.%s.reset-held", n, p.name)
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for m.cell.count(id) == 0 {
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond)
				cancel()
			}()
			if _, err := send(ctx, p, faultRequest{id: id, fault: upNone, hold: 1000}); err == nil {
				t.Error("a stream reset while held got an answer")
			}
			m.procs.alive(t)
			client.CloseIdleConnections()
			m.noLeak(t, before)
			m.logged(t, id, true, marks)
		})
	}
	t.Logf("fault matrix over HTTP/2: %d cases", cases)
}
