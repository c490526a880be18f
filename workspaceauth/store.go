package workspaceauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store keeps the login's short-lived values: login tickets, states and transfer tokens, each
// taken at most once, and logout marks. Shared (Redis) when several edge instances serve one
// domain, so a value made on one instance is spent on all.
type Store interface {
	// Put stores value under key for ttl; a key that exists is an error (keys are random).
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Take returns and deletes the value in one step; ErrSpent when there is none (never put,
	// expired, or taken already).
	Take(ctx context.Context, key string) ([]byte, error)
	// Get reads a value without spending it; ErrSpent when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
}

// ErrSpent: a single-use value is not there (never issued, expired, or used already).
var ErrSpent = errors.New("no such value: expired or used already")

// MemoryStore is a Store for one instance.
type MemoryStore struct {
	mu     sync.Mutex
	values map[string]memoryValue
	now    func() time.Time
}

type memoryValue struct {
	value   []byte
	expires time.Time
}

// NewMemoryStore makes an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{values: map[string]memoryValue{}, now: time.Now}
}

func (s *MemoryStore) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.values) > 1024 {
		for k, v := range s.values {
			if now.After(v.expires) {
				delete(s.values, k)
			}
		}
	}
	if v, ok := s.values[key]; ok && now.Before(v.expires) {
		return fmt.Errorf("workspaceauth: key %q exists", key)
	}
	s.values[key] = memoryValue{value: append([]byte(nil), value...), expires: now.Add(ttl)}
	return nil
}

func (s *MemoryStore) Take(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	delete(s.values, key)
	if !ok || !s.now().Before(v.expires) {
		return nil, ErrSpent
	}
	return v.value, nil
}

func (s *MemoryStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	if !ok || !s.now().Before(v.expires) {
		return nil, ErrSpent
	}
	return v.value, nil
}

// RedisStore is a Store shared by every edge instance on one Redis (the registry's).
type RedisStore struct {
	client redis.UniversalClient
	prefix string
}

// NewRedisStore keeps values under "<prefix>:v1:ws:".
func NewRedisStore(client redis.UniversalClient, prefix string) *RedisStore {
	return &RedisStore{client: client, prefix: prefix + ":v1:ws:"}
}

func (s *RedisStore) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	ok, err := s.client.SetNX(ctx, s.prefix+key, value, ttl).Result()
	switch {
	case err != nil:
		return fmt.Errorf("workspaceauth: store: %w", err)
	case !ok:
		return fmt.Errorf("workspaceauth: key %q exists", key)
	}
	return nil
}

func (s *RedisStore) Take(ctx context.Context, key string) ([]byte, error) {
	return redisValue(s.client.GetDel(ctx, s.prefix+key).Bytes())
}

func (s *RedisStore) Get(ctx context.Context, key string) ([]byte, error) {
	return redisValue(s.client.Get(ctx, s.prefix+key).Bytes())
}

func redisValue(v []byte, err error) ([]byte, error) {
	switch {
	case errors.Is(err, redis.Nil):
		return nil, ErrSpent
	case err != nil:
		return nil, fmt.Errorf("workspaceauth: store: %w", err)
	}
	return v, nil
}
