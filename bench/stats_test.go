package bench

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{7}, 7},
		{"odd unsorted", []float64{3, 1, 2}, 2},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"outlier", []float64{100, 101, 5000}, 101},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := Median(tt.in); got != tt.want {
				t.Errorf("median: got %v, want %v", got, tt.want)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Errorf("input changed: got %v, want %v", tt.in, in)
				}
			}
		})
	}
}

func TestMedianDuration(t *testing.T) {
	got := MedianDuration([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond})
	if want := 2 * time.Millisecond; got != want {
		t.Errorf("median duration: got %v, want %v", got, want)
	}
}

func TestRatio(t *testing.T) {
	if got, ok := Ratio(1, 4); !ok || got != 0.25 {
		t.Errorf("ratio 1/4: got %v %v, want 0.25 true", got, ok)
	}
	if _, ok := Ratio(1, 0); ok {
		t.Errorf("ratio 1/0: got ok, want not ok")
	}
}
