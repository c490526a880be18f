package moves

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Table is an edge's mirror of the fleet's moves: requests read it (Lookup) without touching
// the store; Run keeps it in step.
type Table struct {
	store   Store
	log     *slog.Logger
	changed []func(prev *Move, m Move) // under mu
	cur     atomic.Pointer[map[uint64]Move]
	mu      sync.Mutex // one resync at a time, so that changes are reported in order
}

// NewTable mirrors store. changed, when set, is told of every move that appears or changes as
// the mirror learns of it (prev nil: new), once per change, on this edge.
func NewTable(store Store, log *slog.Logger, changed func(prev *Move, m Move)) *Table {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Table{store: store, log: log}
	if changed != nil {
		t.changed = append(t.changed, changed)
	}
	t.cur.Store(&map[uint64]Move{})
	return t
}

// Lookup is org's move in force, if any.
func (t *Table) Lookup(org uint64) (Move, bool) {
	m, ok := (*t.cur.Load())[org]
	return m, ok
}

// All are the moves in force, by organization.
func (t *Table) All() []Move {
	cur := *t.cur.Load()
	all := make([]Move, 0, len(cur))
	for _, m := range cur {
		all = append(all, m)
	}
	slices.SortFunc(all, func(a, b Move) int { return cmp.Compare(a.Org, b.Org) })
	return all
}

// Run keeps the mirror in step until ctx ends: a full read whenever the watch begins (at
// start, and after the store came back) and after each change any edge announces.
func (t *Table) Run(ctx context.Context) {
	for ctx.Err() == nil {
		t.store.Watch(ctx, func() { t.Resync(ctx) }, func() { t.Resync(ctx) })
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // the watch ended early: begin it again
		}
	}
}

// Resync reads every move from the store into the mirror; a store that cannot be read leaves
// the mirror as it was (the moves edge knows stay in force).
func (t *Table) Resync(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	all, err := t.store.All(ctx)
	if err != nil {
		t.log.Warn("organization moves not read; those known stay in force", "error", err)
		return err
	}
	old := *t.cur.Load()
	next := make(map[uint64]Move, len(all))
	for _, m := range all {
		next[m.Org] = m
	}
	t.cur.Store(&next)
	for _, m := range all {
		for _, f := range t.changed {
			if prev, ok := old[m.Org]; !ok {
				f(nil, m)
			} else if !same(prev, m) {
				f(&prev, m)
			}
		}
	}
	return nil
}

// OnChange adds f to those told of each move that appears or changes.
func (t *Table) OnChange(f func(prev *Move, m Move)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.changed = append(t.changed, f)
}

// Set makes org live in cell at phase, checked against the move in the store (Next), and
// puts the result in force on this edge at once; known says which cells exist.
func (t *Table) Set(ctx context.Context, org, cell uint64, phase Phase, known func(uint64) bool) (Move, error) {
	m, err := t.store.Update(ctx, org, func(prev *Move) (Move, error) {
		return Next(prev, org, cell, phase, known, time.Now())
	})
	if err != nil {
		return Move{}, err
	}
	return m, t.Resync(ctx)
}

// Forget ends org's move everywhere: ErrNotFound when it has none.
func (t *Table) Forget(ctx context.Context, org uint64) error {
	if err := t.store.Delete(ctx, org); err != nil {
		return err
	}
	return t.Resync(ctx)
}

// same: a and b are one move (their times compared as instants: a stored move's location is
// not the one it was made with).
func same(a, b Move) bool {
	return a.Org == b.Org && a.Cell == b.Cell && a.From == b.From && a.Phase == b.Phase && a.Since.Equal(b.Since)
}
