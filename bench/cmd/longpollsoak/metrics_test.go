package main

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	page := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 19817
go_goroutines_extra 5
go_memstats_heap_inuse_bytes 3.145728e+08
go_memstats_stack_inuse_bytes{x="y"} 1
go_memstats_stack_inuse_bytes 1.9e+08
`
	got, err := parseMetrics(strings.NewReader(page), metricGoroutines, metricHeapInuse, metricStackInuse)
	if err != nil {
		t.Fatal(err)
	}
	if got[metricGoroutines] != 19817 || got[metricHeapInuse] != 314572800 || got[metricStackInuse] != 1.9e8 {
		t.Errorf("got %v", got)
	}
	if _, err := parseMetrics(strings.NewReader("go_goroutines_extra 5\n"), metricGoroutines); !errors.Is(err, errNoMetric) {
		t.Errorf("missing metric: err %v", err)
	}
	if _, err := parseMetrics(strings.NewReader("go_goroutines x\n"), metricGoroutines); err == nil {
		t.Error("bad value: no error")
	}
}
