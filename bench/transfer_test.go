package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseTransferOutput(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []TransferSample
		wantErr string
	}{
		{name: "lines", out: "transfer 10485760 20000000\nnoise\ntransfer 5 1000\n",
			want: []TransferSample{{10485760, 20 * time.Millisecond}, {5, time.Microsecond}}},
		{name: "round trip", out: TransferLine(TransferSample{7, 3 * time.Second}), want: []TransferSample{{7, 3 * time.Second}}},
		{name: "none", out: "nothing\n", wantErr: "no transfer lines"},
		{name: "short", out: "transfer 5\n", wantErr: "want"},
		{name: "bad bytes", out: "transfer x 5\n", wantErr: "byte count"},
		{name: "zero time", out: "transfer 5 0\n", wantErr: "duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTransferOutput(tt.out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error: got %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("samples: got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("sample %d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSummarizeTransfers(t *testing.T) {
	ms := time.Millisecond
	// 10 MB in 10 ms is 1000 MB/s (MB = 10^6 bytes).
	const n = 10_000_000
	s := func(d time.Duration) TransferSample { return TransferSample{Bytes: n, Elapsed: d} }
	batches := []TransferBatch{
		{Path: "direct", Direction: Download, Round: 1, Samples: []TransferSample{s(10 * ms), s(20 * ms), s(10 * ms)}},
		{Path: "direct", Direction: Download, Round: 2, Samples: []TransferSample{s(10 * ms)}},
		{Path: "tunnel", Direction: Download, Round: 1, Samples: []TransferSample{s(25 * ms), s(20 * ms)}, HasProxy: true, ProxyCPU: 40 * ms},
		{Path: "tunnel", Direction: Download, Round: 2, Samples: []TransferSample{s(20 * ms), s(50 * ms)}, HasProxy: true, ProxyCPU: 80 * ms},
		{Path: "tunnel", Direction: Upload, Round: 1, Samples: []TransferSample{s(40 * ms)}, HasProxy: true, ProxyCPU: 10 * ms},
	}
	rows := SummarizeTransfers([]string{"direct", "tunnel", "tunnel-hop"}, map[string]string{"tunnel": "through a tunnel"}, batches)
	if len(rows) != 3 {
		t.Fatalf("rows: got %d %+v, want 3", len(rows), rows)
	}
	d, tun, up := rows[0], rows[1], rows[2]
	if d.Path != "direct" || d.Direction != Download || d.Transfers != 4 || d.MBps != 1000 || d.MinMBps != 500 || d.HasProxy {
		t.Errorf("direct download: got %+v", d)
	}
	// Round medians 1000 and 1000: no spread.
	if d.Spread != 0 {
		t.Errorf("direct spread: got %v, want 0", d.Spread)
	}
	// Rates 400, 500, 500, 200: median 450; round medians 450 and 350: spread 100/400.
	if tun.Label != "through a tunnel" || tun.MBps != 450 || tun.MinMBps != 200 || tun.Spread != 0.25 {
		t.Errorf("tunnel download: got %+v", tun)
	}
	// 40 ms over 20 MB (19.07 MiB) and 80 ms over 20 MB: median of 2.097 ms and 4.194 ms per MiB.
	if got, want := tun.ProxyCPUPerMiB, time.Duration(float64(60*ms)/(20e6/MiB)); absDuration(got-want) > time.Microsecond {
		t.Errorf("tunnel cpu/MiB: got %v, want %v", got, want)
	}
	if up.Direction != Upload || up.Path != "tunnel" || up.MBps != 250 {
		t.Errorf("tunnel upload: got %+v", up)
	}
	cells := TransferCells(rows)
	want := [][]string{
		{"transfer", "path", "n", "MB/s", "slowest MB/s", "spread", "path cpu/MiB", "vs direct"},
		{"10000000 B download", "direct", "4", "1000", "500", "0%", "-", "-"},
		{"10000000 B download", "through a tunnel", "4", "450", "200", "25%", "3.15ms", "0.45x"},
		{"10000000 B upload", "through a tunnel", "1", "250", "250", "0%", "1.05ms", "-"},
	}
	checkCells(t, cells, want)
}

func TestFormatBytes(t *testing.T) {
	if got := FormatBytes(10 * MiB); got != "10 MiB" {
		t.Errorf("FormatBytes(10 MiB): got %q", got)
	}
	if got := FormatBytes(1000); got != "1000 B" {
		t.Errorf("FormatBytes(1000): got %q", got)
	}
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
