package moves_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/redistest"
	"gitlab.com/edge/edge/moves"
)

// newFleet makes the store of each of two edges that share their moves.
type newFleet func(t *testing.T) (edge1, edge2 moves.Store)

func TestMemoryStore(t *testing.T) {
	storeContract(t, func(*testing.T) (moves.Store, moves.Store) { s := moves.NewMemory(); return s, s })
}

func TestRedisStore(t *testing.T) {
	srv := redistest.Start(t)
	storeContract(t, func(t *testing.T) (moves.Store, moves.Store) {
		store := func() moves.Store {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { c.Close() })
			return moves.NewRedis(c, t.Name(), nil) // the case's name keeps the cases apart
		}
		return store(), store()
	})
}

var known = func(c uint64) bool { return c >= 1 && c <= 3 }

// edge is one edge's mirror, running until the test ends, with the changes it was told of.
type edge struct {
	table   *moves.Table
	mu      sync.Mutex
	changes []string
}

func startEdge(t *testing.T, s moves.Store) *edge {
	e := &edge{}
	e.table = moves.NewTable(s, nil, func(prev *moves.Move, m moves.Move) {
		e.mu.Lock()
		defer e.mu.Unlock()
		from := "none"
		if prev != nil {
			from = prev.Phase.String()
		}
		e.changes = append(e.changes, from+">"+m.Phase.String())
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.table.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

func (e *edge) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.changes...)
}

func storeContract(t *testing.T, fleet newFleet) {
	ctx := context.Background()
	t.Run("a move made at one edge is in force at the other within 1 s", func(t *testing.T) {
		s1, s2 := fleet(t)
		e1, e2 := startEdge(t, s1), startEdge(t, s2)
		m, err := e1.table.Set(ctx, 7, 3, moves.Freeze, known)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := e1.table.Lookup(7); !ok || got.Phase != moves.Freeze || got.Cell != 3 {
			t.Fatalf("edge 1 right after the move: %+v %v", got, ok)
		}
		start := time.Now()
		poll.Until(t, time.Second, "the move at edge 2", func() bool { got, ok := e2.table.Lookup(7); return ok && got.Cell == 3 })
		t.Logf("edge 2 had the move after %v", time.Since(start))
		if _, err := e2.table.Set(ctx, 7, 3, moves.Switched, known); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, time.Second, "the switch at edge 1", func() bool { got, _ := e1.table.Lookup(7); return got.Phase == moves.Switched })
		got, _ := e1.table.Lookup(7)
		if got.Since.Before(m.Since) || got.Cell != 3 {
			t.Errorf("edge 1 after the switch: %+v", got)
		}
		poll.Until(t, time.Second, "edge 1 told of both phases", func() bool { return len(e1.seen()) == 2 })
		if s := e1.seen(); s[0] != "none>freeze" || s[1] != "freeze>switched" {
			t.Errorf("edge 1 was told %v, want the freeze then the switch, once each", s)
		}
	})
	t.Run("refused: nothing written", func(t *testing.T) {
		s1, s2 := fleet(t)
		e1, e2 := startEdge(t, s1), startEdge(t, s2)
		if _, err := e1.table.Set(ctx, 7, 3, moves.Switched, known); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []struct {
			org, cell uint64
			phase     moves.Phase
			err       error
		}{{7, 3, moves.Freeze, moves.ErrBackwards}, {8, 9, moves.Freeze, moves.ErrUnknownCell}, {0, 3, moves.Freeze, moves.ErrBadMove}} {
			if _, err := e2.table.Set(ctx, bad.org, bad.cell, bad.phase, known); !errors.Is(err, bad.err) {
				t.Errorf("org %d to cell %d %s: %v, want %v", bad.org, bad.cell, bad.phase, err, bad.err)
			}
		}
		all, err := s1.All(ctx)
		if err != nil || len(all) != 1 || all[0].Phase != moves.Switched {
			t.Errorf("stored after the refusals: %+v %v", all, err)
		}
	})
	t.Run("forgotten everywhere; a move never made is not found", func(t *testing.T) {
		s1, s2 := fleet(t)
		e1, e2 := startEdge(t, s1), startEdge(t, s2)
		if _, err := e1.table.Set(ctx, 7, 3, moves.Freeze, known); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, time.Second, "the move at edge 2", func() bool { _, ok := e2.table.Lookup(7); return ok })
		if err := e2.table.Forget(ctx, 7); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, time.Second, "the move gone at edge 1", func() bool { _, ok := e1.table.Lookup(7); return !ok })
		if err := e1.table.Forget(ctx, 7); !errors.Is(err, moves.ErrNotFound) {
			t.Errorf("forgetting again: %v, want ErrNotFound", err)
		}
	})
	t.Run("steps taken at once through two edges are ordered, none lost", func(t *testing.T) {
		s1, s2 := fleet(t)
		// Each step counts one more in Cell (the store does not judge cells): a step that read the
		// move before another's write, then wrote over it, would lose that count.
		const steps = 12 // fewer than updateTries: each step loses at most steps-1 races
		var wg sync.WaitGroup
		for i := range steps {
			s := []moves.Store{s1, s2}[i%2]
			wg.Go(func() {
				_, err := s.Update(ctx, 9, func(prev *moves.Move) (moves.Move, error) {
					m := moves.Move{Org: 9, Cell: 1, Phase: moves.Freeze, Since: time.Now()}
					if prev != nil {
						m.Cell = prev.Cell + 1
					}
					return m, nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		all, err := s2.All(ctx)
		if err != nil || len(all) != 1 || all[0].Cell != steps {
			t.Errorf("after %d steps: %+v %v, want one move counting %d", steps, all, err, steps)
		}
		// A step refused on what another edge wrote writes nothing and says why.
		_, err = s1.Update(ctx, 9, func(*moves.Move) (moves.Move, error) { return moves.Move{}, moves.ErrBackwards })
		if !errors.Is(err, moves.ErrBackwards) {
			t.Errorf("refused step: %v, want ErrBackwards", err)
		}
		if all, _ := s1.All(ctx); len(all) != 1 || all[0].Cell != steps {
			t.Errorf("after the refused step: %+v", all)
		}
	})
	t.Run("an edge that starts later reads the moves in force", func(t *testing.T) {
		s1, s2 := fleet(t)
		e1 := startEdge(t, s1)
		for org := uint64(1); org <= 3; org++ {
			if _, err := e1.table.Set(ctx, org, org, moves.Switched, known); err != nil {
				t.Fatal(err)
			}
		}
		e2 := startEdge(t, s2)
		poll.Until(t, time.Second, "the three moves at the new edge", func() bool { return len(e2.table.All()) == 3 })
		for i, m := range e2.table.All() {
			if m.Org != uint64(i+1) || m.Cell != m.Org || m.Phase != moves.Switched {
				t.Errorf("move %d: %+v", i, m)
			}
		}
	})
}
