package sshproxy

import (
	"sync"
	"time"
)

// failures counts refused logins per source address and per workspace in a sliding window:
// beyond max, logins are refused without asking the authorizer.
type failures struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	by     map[string][]time.Time
}

func newFailures(max int, window time.Duration) *failures {
	return &failures{max: max, window: window, by: map[string][]time.Time{}}
}

func (f *failures) recent(key string, now time.Time) []time.Time {
	ts := f.by[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > f.window {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(f.by, key)
	} else {
		f.by[key] = ts
	}
	return ts
}

func (f *failures) allow(source, workspace string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	return len(f.recent("s:"+source, now)) < f.max && len(f.recent("w:"+workspace, now)) < f.max
}

func (f *failures) fail(source, workspace string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if len(f.by) > 100_000 {
		clear(f.by)
	}
	for _, k := range []string{"s:" + source, "w:" + workspace} {
		f.by[k] = append(f.recent(k, now), now)
	}
}
