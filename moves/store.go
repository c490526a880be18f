package moves

import (
	"context"
	"slices"
	"sync"
)

// Store keeps the moves every edge of a fleet sees.
type Store interface {
	// Update keeps next(org's move in force, nil when none) as org's move, the read and the write
	// one step: a change another edge makes meanwhile is not overwritten, next is asked again on
	// it. An error from next writes nothing; a move the same as the one in force is not written.
	Update(ctx context.Context, org uint64, next func(prev *Move) (Move, error)) (Move, error)
	// Delete forgets org's move: ErrNotFound when it has none.
	Delete(ctx context.Context, org uint64) error
	All(ctx context.Context) ([]Move, error)
	// Watch calls changed after any edge changed a move and synced each time the watch begins or
	// begins again (after the store came back: what changed meanwhile was not seen); it returns
	// when ctx ends.
	Watch(ctx context.Context, changed, synced func())
}

// Memory is the Store of one edge.
type Memory struct {
	mu       sync.Mutex
	moves    map[uint64]Move
	watchers []chan struct{}
}

func NewMemory() *Memory { return &Memory{moves: map[uint64]Move{}} }

func (s *Memory) Update(_ context.Context, org uint64, next func(prev *Move) (Move, error)) (Move, error) {
	s.mu.Lock()
	var prev *Move
	if m, ok := s.moves[org]; ok {
		prev = &m
	}
	m, err := next(prev)
	if err != nil || prev != nil && same(*prev, m) {
		s.mu.Unlock()
		return m, err
	}
	s.moves[org] = m
	s.mu.Unlock()
	s.notify()
	return m, nil
}

func (s *Memory) Delete(_ context.Context, org uint64) error {
	s.mu.Lock()
	_, ok := s.moves[org]
	delete(s.moves, org)
	s.mu.Unlock()
	if !ok {
		return ErrNotFound
	}
	s.notify()
	return nil
}

func (s *Memory) All(context.Context) ([]Move, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]Move, 0, len(s.moves))
	for _, m := range s.moves {
		all = append(all, m)
	}
	return all, nil
}

func (s *Memory) Watch(ctx context.Context, changed, synced func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.watchers = append(s.watchers, ch)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.watchers = slices.DeleteFunc(s.watchers, func(c chan struct{}) bool { return c == ch })
		s.mu.Unlock()
	}()
	synced()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			changed()
		}
	}
}

// notify wakes every watcher; one that has a wake-up pending needs no second.
func (s *Memory) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
