package main

import (
	"context"
	"sync"
	"time"

	"gitlab.com/edge/edge/bench"
)

// memSampler reads edge's /proc/<pid>/status every second: the largest and the latest VmRSS,
// and VmHWM (the kernel's own peak, which catches what falls between two samples).
type memSampler struct {
	pid int

	mu   sync.Mutex
	max  int64
	last int64
	hwm  int64
	err  error
}

func (s *memSampler) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		s.sample()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample takes one reading now; the soak also calls it at the moments it reports.
func (s *memSampler) sample() {
	st, err := bench.ReadProcStatus("/proc", s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	s.last, s.hwm = st.RSS, st.HWM
	s.max = max(s.max, st.RSS)
}

type memReading struct {
	Max, Last, HWM int64
	Err            error
}

func (s *memSampler) reading() memReading {
	s.mu.Lock()
	defer s.mu.Unlock()
	return memReading{Max: s.max, Last: s.last, HWM: s.hwm, Err: s.err}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
