package cellrouter

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"gitlab.com/edge/edge/discovery"
)

// BenchmarkPeerPost512 sends POSTs with a 512-byte body over loopback, through edge's front
// (legacy route, cell transports as built for serving) and through a plain, tuned
// httputil.ReverseProxy (the peer issue 18 measures against), to the same upstream. Each
// request's time is edge's or the peer's whole work plus the same client and upstream work, so
// the ratio of the two ns/op bounds the ratio of the proxies' own CPU from below.
func BenchmarkPeerPost512(b *testing.B) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	b.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	edge := cellsFront(b, []discovery.Cell{{ID: 1, URL: u, Legacy: true}}, nil)
	plain := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() },
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second, DisableCompression: true,
		},
	}
	body := bytes.Repeat([]byte("x"), 512)
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{{"edge", edge}, {"plain_httputil", plain}} {
		b.Run(tt.name, func(b *testing.B) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
			target := srv.URL + "/api/v4/projects/1/issues"
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(target, "application/octet-stream", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
