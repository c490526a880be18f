package workspaceauth

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/redistest"
)

// storeKinds are every Store, each made empty with the given limits.
func storeKinds(t *testing.T) map[string]func(t *testing.T, l Limits) Store {
	srv := redistest.Start(t)
	cluster := redistest.StartCluster(t)
	n := 0
	redisStore := func(c redis.UniversalClient) func(t *testing.T, l Limits) Store {
		return func(t *testing.T, l Limits) Store {
			n++
			t.Cleanup(func() { c.Close() })
			return NewRedisStore(c, "t"+strconv.Itoa(n), l)
		}
	}
	return map[string]func(t *testing.T, l Limits) Store{
		"memory": func(t *testing.T, l Limits) Store {
			s := NewMemoryStore(l)
			s.every = 20 * time.Millisecond
			return s
		},
		"redis": func(t *testing.T, l Limits) Store {
			return redisStore(redis.NewClient(&redis.Options{Addr: srv.Addr}))(t, l)
		},
		"redis cluster": func(t *testing.T, l Limits) Store {
			return redisStore(redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Addr}}))(t, l)
		},
	}
}

// TestStoreContract holds every Store to the same rules: single use, expiry, and the limits per
// client and in total, freed by a take or by expiry.
func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range storeKinds(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("single use", func(t *testing.T) {
				s := newStore(t, Limits{PerClient: 5, Total: 10})
				if err := s.Put(ctx, "k", "10.0.0.1", []byte("v"), time.Minute); err != nil {
					t.Fatal(err)
				}
				if err := s.Put(ctx, "k", "10.0.0.1", []byte("w"), time.Minute); err == nil {
					t.Error("a second Put of the same key succeeded")
				}
				if v, err := s.Get(ctx, "k"); err != nil || string(v) != "v" {
					t.Errorf("Get: %q, %v", v, err)
				}
				if v, err := s.Take(ctx, "k"); err != nil || string(v) != "v" {
					t.Errorf("Take: %q, %v", v, err)
				}
				if _, err := s.Take(ctx, "k"); !errors.Is(err, ErrSpent) {
					t.Errorf("second Take: %v, want ErrSpent", err)
				}
			})
			t.Run("limits", func(t *testing.T) {
				s := newStore(t, Limits{PerClient: 3, Total: 5})
				for i := range 3 {
					if err := s.Put(ctx, fmt.Sprint("a", i), "10.0.0.1", []byte("v"), time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Put(ctx, "a3", "10.0.0.1", []byte("v"), time.Minute); !errors.Is(err, ErrBusy) {
					t.Errorf("past the client's limit: %v, want ErrBusy", err)
				}
				for i := range 2 {
					if err := s.Put(ctx, fmt.Sprint("b", i), "10.0.0.2", []byte("v"), time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Put(ctx, "c0", "10.0.0.3", []byte("v"), time.Minute); !errors.Is(err, ErrBusy) {
					t.Errorf("past the total: %v, want ErrBusy", err)
				}
				if err := s.Put(ctx, "logout:u", "", []byte("1"), time.Minute); err != nil {
					t.Errorf("a value for no client is not limited: %v", err)
				}
				if _, err := s.Take(ctx, "a0"); err != nil {
					t.Fatal(err)
				}
				if err := s.Put(ctx, "a4", "10.0.0.1", []byte("v"), time.Minute); err != nil {
					t.Errorf("after a take the client has room again: %v", err)
				}
			})
			t.Run("expiry frees", func(t *testing.T) {
				s := newStore(t, Limits{PerClient: 2, Total: 10})
				for i := range 2 {
					if err := s.Put(ctx, fmt.Sprint("e", i), "10.0.0.1", []byte("v"), 100*time.Millisecond); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(300 * time.Millisecond)
				if _, err := s.Get(ctx, "e0"); !errors.Is(err, ErrSpent) {
					t.Errorf("expired value: %v, want ErrSpent", err)
				}
				if err := s.Put(ctx, "e2", "10.0.0.1", []byte("v"), time.Minute); err != nil {
					t.Errorf("after expiry the client has room again: %v", err)
				}
			})
		})
	}
}

// TestMemoryStoreDropsExpiredByItself: with no request at all, expired values leave the store.
func TestMemoryStoreDropsExpiredByItself(t *testing.T) {
	s := NewMemoryStore(Limits{PerClient: 100, Total: 100_000})
	s.every = 20 * time.Millisecond
	for i := range 1000 {
		if err := s.Put(context.Background(), fmt.Sprint(i), fmt.Sprint("10.0.", i/100, ".1"), make([]byte, 100), 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	poll.UntilState(t, 5*time.Second, "every value to expire", func() (bool, string) {
		n := s.Len()
		return n == 0, fmt.Sprintf("%d values still held", n)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clients) != 0 || len(s.expiry) != 0 || s.sweeper != nil {
		t.Errorf("left behind: %d clients, %d in the expiry index, sweeper %v", len(s.clients), len(s.expiry), s.sweeper != nil)
	}
}

// TestRedisStoreLeavesNothing: once values expire, Redis holds no key of the store.
func TestRedisStoreLeavesNothing(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	s := NewRedisStore(c, "gone", Limits{PerClient: 100, Total: 100_000})
	ctx := context.Background()
	for i := range 50 {
		if err := s.Put(ctx, fmt.Sprint(i), "10.0.0.1", []byte("v"), 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(400 * time.Millisecond)
	keys, err := c.Keys(ctx, "gone:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("keys left after expiry: %v", keys)
	}
}

// BenchmarkMemoryStorePut: the cost of a Put and a Take does not grow with what the store holds.
func BenchmarkMemoryStorePut(b *testing.B) {
	for _, held := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint("held=", held), func(b *testing.B) {
			s := NewMemoryStore(Limits{PerClient: held + 10, Total: held + 10})
			ctx := context.Background()
			for i := range held {
				_ = s.Put(ctx, fmt.Sprint("h", i), "10.0.0.1", []byte("v"), time.Hour)
			}
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = fmt.Sprint("k", i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[i%len(keys)]
				_ = s.Put(ctx, k, "10.0.0.2", []byte("v"), time.Minute)
				_, _ = s.Take(ctx, k)
			}
		})
	}
}
