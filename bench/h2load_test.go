package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const h2loadOK = `TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2

finished in 5.00s, 52367.20 req/s, 57.13MB/s
requests: 261836 total, 261900 started, 261836 done, 261836 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 261836 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 57.13MB (59903372) total, 1.01MB (1058470) headers (space savings 96.13%), 255.70MB (268120064) data
                     min         max         mean         sd        +/- sd
time for request:      151us     20.48ms      1.21ms       523us    70.00%
time for connect:     1.79ms      2.14ms      1.96ms       248us   100.00%
req/s           :    3271.20     3280.10     3272.95        2.60    62.50%
`

func TestParseH2load(t *testing.T) {
	r, err := ParseH2load(h2loadOK)
	if err != nil {
		t.Fatal(err)
	}
	want := H2loadResult{RequestsPerS: 52367.2, Succeeded: 261836, Protocol: "h2", TLSVersion: "TLSv1.3",
		Cipher: "TLS_AES_128_GCM_SHA256", MeanRequest: 1210 * time.Microsecond}
	if r != want {
		t.Errorf("got %+v\nwant %+v", r, want)
	}

	// A real run against nginx without its upstream: every answer a 502.
	b, err := os.ReadFile("testdata/h2load-502.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err = ParseH2load(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if r.Succeeded != 0 || r.Failed != 33703 || r.Non2xx != 33703 || r.RequestsPerS != 33703 || r.MeanRequest != 101*time.Microsecond {
		t.Errorf("502 run: %+v", r)
	}

	if _, err := ParseH2load("starting benchmark...\n"); err == nil {
		t.Error("output without results parsed")
	}
}

func TestLatencyLog(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "1795520234031846\t200\t%d\n", i*10)
	}
	b.WriteString("1795520234031846\t-1\t999999\n") // a failed stream: not counted
	p50, p99, n, err := H2loadLatencyLog(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n != 100 || p50 != 510*time.Microsecond || p99 != 1000*time.Microsecond {
		t.Errorf("p50 %s p99 %s n %d", p50, p99, n)
	}
	if _, _, _, err := H2loadLatencyLog(strings.NewReader("")); err == nil {
		t.Error("an empty log gave latencies")
	}
}
