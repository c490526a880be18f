package workspaceauth

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"gitlab.com/edge/edge/internal/guard"
)

// defaultCacheSize bounds the cache when NewCache is given no size.
const defaultCacheSize = 10_000

// Cache is an Authorizer that keeps the answers of another, allowed and denied alike, for a
// while, by user ID and workspace (the port is not part of the key: workspaces.md caches by user
// and workspace). Errors, ErrNotFound included, are never kept. Concurrent misses for one key
// make one call.
type Cache struct {
	next  Authorizer
	lru   *expirable.LRU[cacheKey, Decision] // nil: nothing is kept
	calls singleflight.Group
	m     *Metrics
	guard *guard.Guard // the authorizer's panics: singleflight runs it on a goroutine of its own

	mu  sync.Mutex // orders Forget against storing an answer
	gen uint64     // bumped by Forget: an answer asked for before is not stored
}

type cacheKey struct{ user, workspace string }

// flight is the key as one string, length-prefixed so no two keys run together.
func (k cacheKey) flight() string {
	return strconv.Itoa(len(k.user)) + ":" + k.user + k.workspace
}

// NewCache keeps next's answers for ttl (ttl <= 0: nothing is kept, calls are only collapsed),
// at most size of them (size <= 0: 10000). m may be nil.
func NewCache(next Authorizer, ttl time.Duration, size int, m *Metrics) *Cache {
	c := &Cache{next: next, m: m}
	if size <= 0 {
		size = defaultCacheSize
	}
	if ttl > 0 {
		// The LRU's expiry goroutine lives as long as the process: make one Cache, not one per use.
		c.lru = expirable.NewLRU[cacheKey, Decision](size, nil, ttl)
	}
	return c
}

// UseGuard contains the authorizer's panics under g (without one: contained, logged to standard
// error, not counted); a crashed call is ErrUnavailable.
func (c *Cache) UseGuard(g *guard.Guard) *Cache {
	c.guard = g
	return c
}

// Authorize answers from the cache, or asks next. A caller whose ctx ends while it waits gets
// ErrUnavailable; the call itself goes on for the callers still waiting, bounded by the deadline
// of the ctx that started it (and next's own timeout), not by that caller's cancellation.
func (c *Cache) Authorize(ctx context.Context, user User, workspace string, port int) (Decision, error) {
	k := cacheKey{user.ID, workspace}
	if c.lru != nil {
		if d, ok := c.lru.Get(k); ok {
			c.m.cacheHit(true)
			return d, nil
		}
	}
	c.m.cacheHit(false)
	ch := c.calls.DoChan(k.flight(), func() (any, error) {
		return c.guard.Call("workspace_authz", func() (any, error) { return c.ask(ctx, k, user, workspace, port) })
	})
	select {
	case r := <-ch:
		d, _ := r.Val.(Decision)
		if errors.Is(r.Err, guard.ErrCrashed) {
			return Decision{}, fmt.Errorf("%w: %w", ErrUnavailable, r.Err)
		}
		return d, r.Err
	case <-ctx.Done():
		return Decision{}, fmt.Errorf("%w: %w", ErrUnavailable, context.Cause(ctx))
	}
}

func (c *Cache) ask(ctx context.Context, k cacheKey, user User, workspace string, port int) (Decision, error) {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()

	actx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(actx, dl)
		defer cancel()
	}
	d, err := c.next.Authorize(actx, user, workspace, port)
	c.m.Decision(d, err)
	if err != nil || c.lru == nil {
		return d, err
	}
	c.mu.Lock()
	if c.gen == gen {
		c.lru.Add(k, d)
	}
	c.mu.Unlock()
	return d, nil
}

// Forget drops the answer kept for the user and workspace; a call already under way does not
// store its answer, and the next Authorize asks again.
func (c *Cache) Forget(user User, workspace string) {
	k := cacheKey{user.ID, workspace}
	c.mu.Lock()
	c.gen++
	if c.lru != nil {
		c.lru.Remove(k)
	}
	c.mu.Unlock()
	c.calls.Forget(k.flight())
}
