package discovery

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// classifyKey is the routing value an answer is cached by; never a token.
type classifyKey struct {
	kind  uint8
	value uint64
}

type answer struct {
	address string
	found   bool
}

type cachedAnswer struct {
	answer
	expires time.Time
}

// classifyCache is sharded like LearnedJobs; expiry is checked against the injected clock, so
// golang-lru's plain (non-expiring) LRU is enough and starts no goroutine.
type classifyCache struct {
	shards []*lru.Cache[classifyKey, cachedAnswer]
}

func newClassifyCache(size int) (*classifyCache, error) {
	sizes := shardSizes(size, shardCount(size))
	c := &classifyCache{shards: make([]*lru.Cache[classifyKey, cachedAnswer], len(sizes))}
	for i, n := range sizes {
		s, err := lru.New[classifyKey, cachedAnswer](n)
		if err != nil {
			return nil, err
		}
		c.shards[i] = s
	}
	return c, nil
}

func (c *classifyCache) get(k classifyKey, now time.Time) (answer, bool) {
	e, ok := c.shard(k).Get(k)
	if !ok || !now.Before(e.expires) {
		return answer{}, false
	}
	return e.answer, true
}

func (c *classifyCache) add(k classifyKey, a answer, expires time.Time) {
	c.shard(k).Add(k, cachedAnswer{answer: a, expires: expires})
}

func (c *classifyCache) shard(k classifyKey) *lru.Cache[classifyKey, cachedAnswer] {
	return c.shards[shardOf(k.value^uint64(k.kind)<<56, len(c.shards))]
}

// forget drops the found answers whose address names matches, and the answers about the values
// of keys; it returns how many it dropped.
func (c *classifyCache) forget(names func(address string) bool, keys []classifyKey) int {
	n := 0
	for _, s := range c.shards {
		for _, k := range s.Keys() {
			if e, ok := s.Peek(k); ok && e.found && names(e.address) && s.Remove(k) {
				n++
			}
		}
	}
	for _, k := range keys {
		if c.shard(k).Remove(k) {
			n++
		}
	}
	return n
}
