package workspaceauth

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// Store keeps the login's short-lived values: login tickets, states and transfer tokens, each
// taken at most once, and logout marks. Shared (Redis) when several edge instances serve one
// domain, so a value made on one instance is spent on all.
//
// A value put for a client (the address whose request made it) counts against that client and
// against the store's total until it is taken or expires: unauthenticated requests make these
// values, so their number is bounded, not their rate.
type Store interface {
	// Put stores value under key for ttl; a key that exists is an error (keys are random).
	// With a client, ErrBusy when the client or the store holds its limit already; client ""
	// (logout marks) is not counted.
	Put(ctx context.Context, key, client string, value []byte, ttl time.Duration) error
	// Take returns and deletes the value in one step; ErrSpent when there is none (never put,
	// expired, or taken already).
	Take(ctx context.Context, key string) ([]byte, error)
	// Get reads a value without spending it; ErrSpent when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
}

// Limits bound the values a store holds for clients.
type Limits struct {
	PerClient int // values one client address may have at once
	Total     int // values all clients together may have at once
}

// sweepEvery is how often a memory store drops expired values while it holds any.
const sweepEvery = 5 * time.Second

// MemoryStore is a Store for one instance. Every operation costs O(log n): values are indexed
// by expiry, and expired ones are dropped from the front, by the operations and by a timer that
// runs while the store holds anything.
type MemoryStore struct {
	limits  Limits
	mu      sync.Mutex
	values  map[string]*memoryValue
	expiry  expiryHeap
	clients map[string]int
	counted int // values held for a client
	now     func() time.Time
	every   time.Duration // between sweeps
	sweeper *time.Timer
}

type memoryValue struct {
	key, client string
	value       []byte
	expires     time.Time
	index       int // in expiry
}

// NewMemoryStore makes an empty in-memory store with the given limits.
func NewMemoryStore(limits Limits) *MemoryStore {
	return &MemoryStore{limits: limits, values: map[string]*memoryValue{}, clients: map[string]int{}, now: time.Now, every: sweepEvery}
}

func (s *MemoryStore) Put(_ context.Context, key, client string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.dropExpired(now)
	if _, ok := s.values[key]; ok {
		return fmt.Errorf("workspaceauth: key %q exists", key)
	}
	if client != "" && (s.clients[client] >= s.limits.PerClient || s.counted >= s.limits.Total) {
		return ErrBusy
	}
	v := &memoryValue{key: key, client: client, value: append([]byte(nil), value...), expires: now.Add(ttl)}
	s.values[key] = v
	heap.Push(&s.expiry, v)
	if client != "" {
		s.clients[client]++
		s.counted++
	}
	if s.sweeper == nil {
		s.sweeper = time.AfterFunc(s.every, s.sweep) // guard: drops expired values under its lock
	}
	return nil
}

func (s *MemoryStore) Take(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	if !ok {
		return nil, ErrSpent
	}
	s.remove(v)
	if !s.now().Before(v.expires) {
		return nil, ErrSpent
	}
	return v.value, nil
}

func (s *MemoryStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	if !ok || !s.now().Before(v.expires) {
		return nil, ErrSpent
	}
	return v.value, nil
}

// Len is the number of values held, expired ones not yet dropped included.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

func (s *MemoryStore) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpired(s.now())
	if len(s.values) > 0 {
		s.sweeper.Reset(s.every)
	} else {
		s.sweeper = nil
	}
}

func (s *MemoryStore) dropExpired(now time.Time) {
	for len(s.expiry) > 0 && !now.Before(s.expiry[0].expires) {
		s.remove(s.expiry[0])
	}
}

func (s *MemoryStore) remove(v *memoryValue) {
	delete(s.values, v.key)
	heap.Remove(&s.expiry, v.index)
	if v.client == "" {
		return
	}
	s.counted--
	if s.clients[v.client]--; s.clients[v.client] <= 0 {
		delete(s.clients, v.client)
	}
}

// expiryHeap orders values by expiry, the soonest first.
type expiryHeap []*memoryValue

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	v := x.(*memoryValue)
	v.index = len(*h)
	*h = append(*h, v)
}
func (h *expiryHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return v
}
