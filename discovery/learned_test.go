package discovery

import (
	"fmt"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

func TestLearnedJobsBound(t *testing.T) {
	l := NewLearnedJobs(10, time.Hour)
	for id := uint64(1); id <= 20; id++ {
		l.Learn(id, id%3+1)
	}
	if got, want := l.Len(), 10; got != want {
		t.Errorf("Len: got %d, want %d", got, want)
	}
	for id := uint64(1); id <= 10; id++ {
		if cell, ok := l.Lookup(id); ok {
			t.Errorf("Lookup(%d) after eviction: got cell %d, want none", id, cell)
		}
	}
	for id := uint64(11); id <= 20; id++ {
		if cell, ok := l.Lookup(id); !ok || cell != id%3+1 {
			t.Errorf("Lookup(%d): got %d %v, want %d", id, cell, ok, id%3+1)
		}
	}
}

func TestLearnedJobsEvictsLeastRecentlyUsed(t *testing.T) {
	l := NewLearnedJobs(3, time.Hour)
	l.Learn(1, 1)
	l.Learn(2, 1)
	l.Learn(3, 1)
	l.Lookup(1) // now 2 is the least recently used
	l.Learn(4, 1)
	tests := []struct {
		id   uint64
		want bool
	}{{1, true}, {2, false}, {3, true}, {4, true}}
	for _, tt := range tests {
		if _, ok := l.Lookup(tt.id); ok != tt.want {
			t.Errorf("Lookup(%d): got %v, want %v", tt.id, ok, tt.want)
		}
	}
}

func TestLearnedJobsRelearnUpdatesCell(t *testing.T) {
	l := NewLearnedJobs(3, time.Hour)
	l.Learn(7, 1)
	l.Learn(7, 2)
	if cell, ok := l.Lookup(7); !ok || cell != 2 {
		t.Errorf("Lookup(7): got %d %v, want 2", cell, ok)
	}
	if got, want := l.Len(), 1; got != want {
		t.Errorf("Len: got %d, want %d", got, want)
	}
}

func TestLearnedJobsShardedBound(t *testing.T) {
	const size = 50_000
	l := NewLearnedJobs(size, time.Hour)
	if got := len(l.shards); got < 2 {
		t.Fatalf("shards for %d entries: got %d, want several", size, got)
	}
	for id := uint64(1); id <= 3*size; id++ {
		l.Learn(id, 1)
	}
	if got := l.Len(); got > size || got < size*9/10 {
		t.Errorf("Len after %d learns: got %d, want at most %d and close to it", 3*size, got, size)
	}
	if cell, ok := l.Lookup(3 * size); !ok || cell != 1 {
		t.Errorf("Lookup(newest): got %d %v, want 1", cell, ok)
	}
}

func TestLearnedJobsExpiry(t *testing.T) {
	const ttl = 300 * time.Millisecond
	l := NewLearnedJobs(10, ttl)
	start := time.Now()
	l.Learn(42, 2)
	if cell, ok := l.Lookup(42); !ok || cell != 2 {
		if time.Since(start) < ttl {
			t.Fatalf("Lookup(42) right after Learn: got %d %v, want 2", cell, ok)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	poll.Until(t, time.Until(deadline), fmt.Sprintf("Lookup(42) to expire (learned with ttl %v)", ttl), func() bool {
		_, ok := l.Lookup(42)
		return !ok
	})
	if elapsed := time.Since(start); elapsed < ttl {
		t.Errorf("expired after %v, want not before %v", elapsed, ttl)
	}
	poll.UntilState(t, time.Until(deadline), "Len 0 once the cleanup has run", func() (bool, string) {
		n := l.Len()
		return n == 0, fmt.Sprintf("Len %d", n)
	})
}

func TestLearnedJobsDefaults(t *testing.T) {
	l := NewLearnedJobs(0, 0)
	for id := uint64(1); id <= 2*DefaultLearnedJobsSize; id++ {
		l.Learn(id, 1)
	}
	if got, want := l.Len(), DefaultLearnedJobsSize; got != want {
		t.Errorf("Len with the default size: got %d, want %d", got, want)
	}
	if cell, ok := l.Lookup(2 * DefaultLearnedJobsSize); !ok || cell != 1 {
		t.Errorf("Lookup(newest): got %d %v, want 1", cell, ok)
	}
}

func TestLearnedJobsLookupDoesNotAllocate(t *testing.T) {
	l := NewLearnedJobs(100, time.Hour)
	l.Learn(5, 1)
	if got := testing.AllocsPerRun(100, func() { l.Lookup(5) }); got != 0 {
		t.Errorf("Lookup allocations: got %v, want 0", got)
	}
}

func BenchmarkLearnedJobsLookup(b *testing.B) {
	l := NewLearnedJobs(DefaultLearnedJobsSize, time.Hour)
	for id := uint64(0); id < DefaultLearnedJobsSize; id++ {
		l.Learn(id, id%4)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var id uint64
		for pb.Next() {
			l.Lookup(id % DefaultLearnedJobsSize)
			id += 7919
		}
	})
}
