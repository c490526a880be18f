package discovery

const (
	maxShards = 16
	// Below this many entries per shard, one exactly ordered LRU is worth more than less contention.
	minShardEntries = 1024
)

// shardCount is a power of two so shardOf can mask instead of divide.
func shardCount(size int) int {
	n := 1
	for n < maxShards && size/(n*2) >= minShardEntries {
		n *= 2
	}
	return n
}

// shardSizes splits size over n shards so the shards together hold at most size entries.
func shardSizes(size, n int) []int {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = size / n
		if i < size%n {
			sizes[i]++
		}
	}
	return sizes
}

// shardOf spreads sequential ids (job ids are sequential) over the shards with a Fibonacci hash.
func shardOf(key uint64, n int) int {
	return int((key*0x9E3779B97F4A7C15)>>58) & (n - 1)
}
