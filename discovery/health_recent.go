package discovery

import (
	"slices"
	"sync/atomic"
	"time"
)

// recentSize is how many of a cell's latest requests its summary covers.
const recentSize = 1024

// recent keeps the status and duration of a cell's latest requests, written without a lock: one
// slot a request, status in the top 16 bits, microseconds below.
type recent struct {
	next  atomic.Uint64
	slots [recentSize]atomic.Uint64
}

// Observe records one request's status and duration.
func (c *CellHealth) Observe(status int, d time.Duration) {
	i := c.recent.next.Add(1) - 1
	us := uint64(max(d.Microseconds(), 0)) & (1<<48 - 1)
	c.recent.slots[i%recentSize].Store(uint64(status)<<48 | us)
}

// Recent summarizes a cell's latest requests: how many, by status class ("2xx", ..., "499" for
// clients that went away), and the median and 99th percentile duration.
type Recent struct {
	Requests int            `json:"requests"`
	Statuses map[string]int `json:"statuses"`
	P50      time.Duration  `json:"-"`
	P99      time.Duration  `json:"-"`
}

func (c *CellHealth) Recent() Recent {
	n := min(c.recent.next.Load(), recentSize)
	out := Recent{Requests: int(n), Statuses: map[string]int{}}
	durations := make([]time.Duration, 0, n)
	for i := range n {
		v := c.recent.slots[i].Load()
		status := int(v >> 48)
		class := string(rune('0'+status/100)) + "xx"
		if status == 499 {
			class = "499"
		}
		out.Statuses[class]++
		durations = append(durations, time.Duration(v&(1<<48-1))*time.Microsecond)
	}
	if len(durations) > 0 {
		slices.Sort(durations)
		out.P50 = durations[len(durations)/2]
		out.P99 = durations[min(len(durations)-1, len(durations)*99/100)]
	}
	return out
}
