package tunnel

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// The same upstream, reached directly over loopback and through the tunnel (edge Transport ->
// yamux over loopback TCP -> agent -> upstream), both with keep-alive connections.
func benchTargets(b *testing.B) []struct {
	name string
	rt   http.RoundTripper
	url  func(path string) string
} {
	e := newEnv(b, envOptions{})
	e.waitConnected(1)
	direct := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	b.Cleanup(direct.CloseIdleConnections)
	return []struct {
		name string
		rt   http.RoundTripper
		url  func(path string) string
	}{
		{"direct", direct, func(p string) string { return e.upstream.URL + p }},
		{"tunnel", portSetter{e.server.Transport(testAgent), e.upstream.port}, func(p string) string { return "http://agent" + p }},
	}
}

type portSetter struct {
	rt   http.RoundTripper
	port int
}

func (p portSetter) RoundTrip(r *http.Request) (*http.Response, error) {
	r.Header.Set(PortHeader, fmt.Sprint(p.port))
	return p.rt.RoundTrip(r)
}

func BenchmarkRequests(b *testing.B) {
	for _, tgt := range benchTargets(b) {
		b.Run(tgt.name, func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodGet, tgt.url("/hello"), nil)
					resp, err := tgt.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

func BenchmarkDownload10MiB(b *testing.B) {
	const size = 10 << 20
	for _, tgt := range benchTargets(b) {
		b.Run(tgt.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, tgt.url(fmt.Sprintf("/bytes?n=%d", size)), nil)
				resp, err := tgt.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n != size {
					b.Fatalf("got %d bytes, want %d", n, size)
				}
			}
		})
	}
}

func BenchmarkUpload10MiB(b *testing.B) {
	const size = 10 << 20
	for _, tgt := range benchTargets(b) {
		b.Run(tgt.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, tgt.url("/discard"), &zeros{left: size})
				resp, err := tgt.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

// zeros is a cheap request body of n bytes (no WriterTo, so the transport copies it as it would
// a client's body).
type zeros struct{ left int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), z.left)
	clear(p[:n])
	z.left -= n
	return n, nil
}
