package main

import (
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(`# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 42
process_resident_memory_bytes 2.5e+07
edge_cell_up{cell="2"} 1
edge_cell_address_up{cell="2",address="http://127.0.0.1:3002"} 0
`))
	if err != nil {
		t.Fatal(err)
	}
	if m[metricGoroutines] != 42 || m[metricRSS] != 25e6 || m[`edge_cell_up{cell="2"}`] != 1 {
		t.Errorf("got %v", m)
	}
	if _, ok := m[`edge_cell_address_up{cell="2",address="http://127.0.0.1:3002"}`]; !ok {
		t.Errorf("a series with two labels is missing: %v", m)
	}
	if _, err := parseMetrics(strings.NewReader("go_goroutines x\n")); err == nil {
		t.Error("a value that is not a number: no error")
	}
}
