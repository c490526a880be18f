package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	tests := []struct {
		file            string
		requests        int64
		elapsed         time.Duration
		rps             float64
		p50, p75, p99   time.Duration
		sockErr, non2xx int64
		latAvg, latMax  time.Duration
	}{
		{
			file: "testdata/wrk-ok.txt", requests: 138241, elapsed: 2 * time.Second, rps: 69049.24,
			p50: 729 * time.Microsecond, p75: 1030 * time.Microsecond, p99: 1910 * time.Microsecond,
			latAvg: 733840 * time.Nanosecond, latMax: 4570 * time.Microsecond,
		},
		{
			file: "testdata/wrk-errors.txt", requests: 411625, elapsed: 10 * time.Second, rps: 41162.50,
			p50: 850 * time.Microsecond, p75: 1100 * time.Microsecond, p99: 12400 * time.Microsecond,
			sockErr: 5, non2xx: 17, latAvg: 1210 * time.Microsecond, latMax: 1020 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseWrk(string(b))
			if err != nil {
				t.Fatalf("ParseWrk: %v", err)
			}
			if got.Requests != tt.requests {
				t.Errorf("requests: got %v, want %v", got.Requests, tt.requests)
			}
			if got.Elapsed != tt.elapsed {
				t.Errorf("elapsed: got %v, want %v", got.Elapsed, tt.elapsed)
			}
			if got.RequestsPerS != tt.rps {
				t.Errorf("requests/s: got %v, want %v", got.RequestsPerS, tt.rps)
			}
			if !near(got.P50(), tt.p50) || !near(got.Percentiles[75], tt.p75) || !near(got.P99(), tt.p99) {
				t.Errorf("percentiles: got %v, want p50 %v p75 %v p99 %v", got.Percentiles, tt.p50, tt.p75, tt.p99)
			}
			if got.SocketErrors != tt.sockErr {
				t.Errorf("socket errors: got %v, want %v", got.SocketErrors, tt.sockErr)
			}
			if got.Non2xx3xx != tt.non2xx {
				t.Errorf("non-2xx: got %v, want %v", got.Non2xx3xx, tt.non2xx)
			}
			if !near(got.LatencyAvg, tt.latAvg) || !near(got.LatencyMax, tt.latMax) {
				t.Errorf("latency avg/max: got %v/%v, want %v/%v", got.LatencyAvg, got.LatencyMax, tt.latAvg, tt.latMax)
			}
		})
	}
}

// near allows for float rounding in the decimal-to-duration conversion.
func near(got, want time.Duration) bool {
	d := got - want
	return d > -time.Microsecond/100 && d < time.Microsecond/100
}

func TestParseWrkIncomplete(t *testing.T) {
	ok, err := os.ReadFile("testdata/wrk-ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		out     string
		wantErr string
	}{
		{"empty", "", "requests in"},
		{"connect refused", "unable to connect to 127.0.0.1:1 Connection refused\n", "requests in"},
		{"no --latency", dropLines(string(ok), "%"), "latency distribution"},
		{"no rate", dropLines(string(ok), "Requests/sec"), "Requests/sec"},
		{"bad count", strings.Replace(string(ok), "138241 requests", "x requests", 1), "request count"},
		{"bad unit", strings.Replace(string(ok), "729.00us", "729.00ns", 1), "bad wrk duration"},
		{"bad non-2xx", string(ok) + "  Non-2xx or 3xx responses: x\n", "non-2xx"},
		{"bad socket errors", string(ok) + "  Socket errors: connect x, read 0, write 0, timeout 0\n", "socket errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWrk(tt.out)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error: got %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func dropLines(s, containing string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, containing) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func TestParseWrkDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"729.00us", 729 * time.Microsecond, false},
		{"1.03ms", 1030 * time.Microsecond, false},
		{"2.00s", 2 * time.Second, false},
		{"1.50m", 90 * time.Second, false},
		{"1.00h", time.Hour, false},
		{"0.00us", 0, false},
		{"12", 0, true},
		{"ms", 0, true},
		{"-1.0ms", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseWrkDuration(tt.in)
			if (err != nil) != tt.err {
				t.Fatalf("error: got %v, want error %v", err, tt.err)
			}
			if !near(got, tt.want) {
				t.Errorf("duration: got %v, want %v", got, tt.want)
			}
		})
	}
}
