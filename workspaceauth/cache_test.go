package workspaceauth

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// cacheFake answers by workspace name, counts its calls, and can be held until the test lets go.
type cacheFake struct {
	calls   atomic.Int32
	entered chan struct{} // nil, or a send at each call
	gate    chan struct{} // nil, or each call waits until it is closed (or its ctx ends)
}

func (f *cacheFake) Authorize(ctx context.Context, user User, workspace string, port int) (Decision, error) {
	f.calls.Add(1)
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return Decision{}, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
	}
	switch workspace {
	case "ws-allowed":
		return Decision{Allowed: true, AgentID: "a1", WorkspaceID: workspace}, nil
	case "ws-denied":
		return Decision{}, nil
	case "ws-gone":
		return Decision{}, fmt.Errorf("%w: %q", ErrNotFound, workspace)
	default:
		return Decision{}, fmt.Errorf("%w: status 500", ErrUnavailable)
	}
}

func cacheAlice() User { return User{ID: "1", Username: "alice"} }

func TestCacheKeeps(t *testing.T) {
	tests := []struct {
		workspace string
		want      Decision
		wantErr   error
		calls     int32 // made by two Authorize
		decision  string
	}{
		{"ws-allowed", Decision{Allowed: true, AgentID: "a1", WorkspaceID: "ws-allowed"}, nil, 1, "allowed"},
		{"ws-denied", Decision{}, nil, 1, "denied"},
		{"ws-gone", Decision{}, ErrNotFound, 2, "denied"},
		{"ws-down", Decision{}, ErrUnavailable, 2, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.workspace, func(t *testing.T) {
			m, reg := newTestMetrics(t)
			next := &cacheFake{}
			c := NewCache(next, time.Hour, 10, m)
			for i := range 2 {
				got, err := c.Authorize(t.Context(), cacheAlice(), tt.workspace, 60001)
				if got != tt.want {
					t.Errorf("decision %d: got %+v, want %+v", i, got, tt.want)
				}
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Errorf("error %d: got %v, want %v", i, err, tt.wantErr)
				}
			}
			if got := next.calls.Load(); got != tt.calls {
				t.Errorf("calls: got %d, want %d", got, tt.calls)
			}
			for _, s := range []metricsSeries{
				{"edge_workspace_authz_cache_total", []string{"result", "hit"}, float64(2 - tt.calls)},
				{"edge_workspace_authz_cache_total", []string{"result", "miss"}, float64(tt.calls)},
				{"edge_workspace_authorizations_total", []string{"decision", tt.decision}, float64(tt.calls)},
			} {
				s.check(t, reg)
			}
		})
	}
}

func TestCacheKey(t *testing.T) {
	next := &cacheFake{}
	c := NewCache(next, time.Hour, 10, nil)
	steps := []struct {
		name      string
		user      User
		workspace string
		port      int
		calls     int32 // after the step
	}{
		{"first", cacheAlice(), "ws-allowed", 60001, 1},
		{"again", cacheAlice(), "ws-allowed", 60001, 1},
		{"other port", cacheAlice(), "ws-allowed", 8080, 1},
		{"same ID, other username", User{ID: "1", Username: "alice2"}, "ws-allowed", 60001, 1},
		{"other ID, same username", User{ID: "2", Username: "alice"}, "ws-allowed", 60001, 2},
		{"other workspace", cacheAlice(), "ws-denied", 60001, 3},
		{"no run-together keys", User{ID: "1ws"}, "-allowed", 60001, 4},
	}
	for _, s := range steps {
		if _, err := c.Authorize(t.Context(), s.user, s.workspace, s.port); err != nil && s.workspace != "-allowed" {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := next.calls.Load(); got != s.calls {
			t.Errorf("%s: calls: got %d, want %d", s.name, got, s.calls)
		}
	}
}

func TestCacheForget(t *testing.T) {
	next := &cacheFake{}
	c := NewCache(next, time.Hour, 10, nil)
	bob := User{ID: "2", Username: "bob"}
	for _, u := range []User{cacheAlice(), bob} {
		if _, err := c.Authorize(t.Context(), u, "ws-allowed", 1); err != nil {
			t.Fatal(err)
		}
	}
	c.Forget(cacheAlice(), "ws-allowed")
	c.Forget(cacheAlice(), "ws-unknown") // nothing kept: nothing happens
	for _, u := range []User{cacheAlice(), bob} {
		if _, err := c.Authorize(t.Context(), u, "ws-allowed", 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := next.calls.Load(); got != 3 {
		t.Errorf("calls: got %d, want 3 (alice asked again, bob not)", got)
	}
}

// An answer asked for before a Forget is not kept, and a caller after the Forget does not wait
// for it: it asks again.
func TestCacheForgetInFlight(t *testing.T) {
	entered := func(t *testing.T, next *cacheFake) {
		t.Helper()
		select {
		case <-next.entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("next was not called")
		}
	}
	ask := func(c *Cache) chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := c.Authorize(context.Background(), cacheAlice(), "ws-allowed", 1)
			errc <- err
		}()
		return errc
	}

	t.Run("not kept", func(t *testing.T) {
		next := &cacheFake{entered: make(chan struct{}, 2), gate: make(chan struct{})}
		c := NewCache(next, time.Hour, 10, nil)
		first := ask(c)
		entered(t, next)
		c.Forget(cacheAlice(), "ws-allowed")
		close(next.gate)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := <-ask(c); err != nil {
			t.Fatal(err)
		}
		if got := next.calls.Load(); got != 2 {
			t.Errorf("calls: got %d, want 2 (the first answer not kept)", got)
		}
	})

	t.Run("not joined", func(t *testing.T) {
		next := &cacheFake{entered: make(chan struct{}, 2), gate: make(chan struct{})}
		c := NewCache(next, time.Hour, 10, nil)
		first := ask(c)
		entered(t, next)
		c.Forget(cacheAlice(), "ws-allowed")
		second := ask(c)
		entered(t, next) // a call of its own
		close(next.gate)
		for _, errc := range []chan error{first, second} {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		// The second call began after the Forget: its answer is kept.
		if err := <-ask(c); err != nil {
			t.Fatal(err)
		}
		if got := next.calls.Load(); got != 2 {
			t.Errorf("calls: got %d, want 2", got)
		}
	})
}

func TestCacheExpires(t *testing.T) {
	next := &cacheFake{}
	c := NewCache(next, 10*time.Millisecond, 10, nil)
	poll.Until(t, 10*time.Second, "the kept answer to expire", func() bool {
		if next.calls.Load() >= 2 {
			return true
		}
		if _, err := c.Authorize(t.Context(), cacheAlice(), "ws-allowed", 1); err != nil {
			t.Fatal(err)
		}
		return next.calls.Load() >= 2
	})
}

func TestCacheSize(t *testing.T) {
	next := &cacheFake{}
	c := NewCache(next, time.Hour, 2, nil)
	for _, id := range []string{"1", "2", "3", "1"} { // 3 pushes 1 out
		if _, err := c.Authorize(t.Context(), User{ID: id}, "ws-allowed", 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := next.calls.Load(); got != 4 {
		t.Errorf("calls: got %d, want 4", got)
	}
}

func TestCacheNoTTL(t *testing.T) {
	for _, ttl := range []time.Duration{0, -time.Second} {
		t.Run(ttl.String(), func(t *testing.T) {
			next := &cacheFake{}
			c := NewCache(next, ttl, 10, nil)
			for range 3 {
				if _, err := c.Authorize(t.Context(), cacheAlice(), "ws-allowed", 1); err != nil {
					t.Fatal(err)
				}
			}
			if got := next.calls.Load(); got != 3 {
				t.Errorf("calls: got %d, want 3", got)
			}
		})
	}
}

// Callers missing the same key at once make one call. (In a synctest bubble, so the test can
// wait until every caller waits; ttl 0 there, as the LRU's expiry goroutine never ends.)
func TestCacheCollapses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reg := newTestMetrics(t)
		next := &cacheFake{gate: make(chan struct{})}
		c := NewCache(next, 0, 10, m)
		const n = 5
		got := make(chan Decision, n)
		for range n {
			go func() {
				d, err := c.Authorize(context.Background(), cacheAlice(), "ws-allowed", 1)
				if err != nil {
					t.Errorf("Authorize: %v", err)
				}
				got <- d
			}()
		}
		synctest.Wait()
		close(next.gate)
		want := Decision{Allowed: true, AgentID: "a1", WorkspaceID: "ws-allowed"}
		for range n {
			if d := <-got; d != want {
				t.Errorf("decision: got %+v, want %+v", d, want)
			}
		}
		if calls := next.calls.Load(); calls != 1 {
			t.Errorf("calls: got %d, want 1", calls)
		}
		metricsSeries{"edge_workspace_authorizations_total", []string{"decision", "allowed"}, 1}.check(t, reg)
		metricsSeries{"edge_workspace_authz_cache_total", []string{"result", "miss"}, n}.check(t, reg)
	})
}

// A caller that gives up gets ErrUnavailable at once; the call it started goes on for the others,
// not cancelled with it, and bounded by its deadline.
func TestCacheCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &cacheFake{gate: make(chan struct{})}
		c := NewCache(next, 0, 10, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		first, second := make(chan error, 1), make(chan error, 1)
		go func() {
			_, err := c.Authorize(ctx, cacheAlice(), "ws-allowed", 1)
			first <- err
		}()
		synctest.Wait() // the first caller is in next
		go func() {
			d, err := c.Authorize(context.Background(), cacheAlice(), "ws-allowed", 1)
			if err == nil && !d.Allowed {
				err = errors.New("denied")
			}
			second <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-first; !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Errorf("first caller: got %v, want %v wrapping %v", err, ErrUnavailable, context.Canceled)
		}
		close(next.gate)
		if err := <-second; err != nil {
			t.Errorf("second caller: got %v, want allowed", err)
		}
		if calls := next.calls.Load(); calls != 1 {
			t.Errorf("calls: got %d, want 1", calls)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			next := &cacheFake{gate: make(chan struct{})} // never opened: only the deadline ends it
			c := NewCache(next, 0, 10, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 2)
			for _, ctx := range []context.Context{ctx, context.Background()} {
				go func() {
					_, err := c.Authorize(ctx, cacheAlice(), "ws-allowed", 1)
					done <- err
				}()
				synctest.Wait()
			}
			// The second caller, without a deadline, still gets an answer: the first's deadline.
			for range 2 {
				if err := <-done; !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error: got %v, want %v wrapping %v", err, ErrUnavailable, context.DeadlineExceeded)
				}
			}
		})
	})
}
