package discovery

import (
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Defaults for NewLearnedJobs, from tokens.md section 4.
const (
	DefaultLearnedJobsSize = 100_000
	DefaultLearnedJobsTTL  = 24 * time.Hour
)

// LearnedJobs remembers which cell answered a job (from 201 answers to POST jobs/request): a
// bounded LRU whose entries expire. Safe for concurrent use.
//
// Large caches are split into up to 16 shards by job id, each its own LRU with its own lock, so
// concurrent lookups rarely wait on each other; eviction order is then per shard, and the shards
// together never hold more than size ids.
type LearnedJobs struct {
	shards []*expirable.LRU[uint64, uint64]
}

// NewLearnedJobs makes a cache of at most size job ids, each kept for ttl after it was last
// learned. size <= 0 means DefaultLearnedJobsSize, ttl <= 0 DefaultLearnedJobsTTL.
//
// Each shard runs a cleanup goroutine that golang-lru/v2 gives no way to stop, so make one
// LearnedJobs per process, not one per request or per config reload.
func NewLearnedJobs(size int, ttl time.Duration) *LearnedJobs {
	if size <= 0 {
		size = DefaultLearnedJobsSize
	}
	if ttl <= 0 {
		ttl = DefaultLearnedJobsTTL
	}
	sizes := shardSizes(size, shardCount(size))
	l := &LearnedJobs{shards: make([]*expirable.LRU[uint64, uint64], len(sizes))}
	for i, n := range sizes {
		l.shards[i] = expirable.NewLRU[uint64, uint64](n, nil, ttl)
	}
	return l
}

// Learn records that jobID belongs to cellID, restarting its expiry.
func (l *LearnedJobs) Learn(jobID, cellID uint64) {
	l.shard(jobID).Add(jobID, cellID)
}

// Lookup returns the cell learned for jobID, if it is still remembered and not expired.
func (l *LearnedJobs) Lookup(jobID uint64) (cellID uint64, ok bool) {
	return l.shard(jobID).Get(jobID)
}

// Len counts the remembered ids, including expired ones the cleanup has not removed yet.
func (l *LearnedJobs) Len() int {
	n := 0
	for _, s := range l.shards {
		n += s.Len()
	}
	return n
}

func (l *LearnedJobs) shard(jobID uint64) *expirable.LRU[uint64, uint64] {
	return l.shards[shardOf(jobID, len(l.shards))]
}
