package main

import "sync"

// eventLog is what a script (the faults, the move) did so far, each entry changed as it goes on;
// the load and the report read it while the script appends.
type eventLog[T any] struct {
	mu   sync.Mutex
	list []*T
}

func (l *eventLog[T]) add(e *T) {
	l.mu.Lock()
	l.list = append(l.list, e)
	l.mu.Unlock()
}

// snapshot copies the entries.
func (l *eventLog[T]) snapshot() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]T, len(l.list))
	for i, e := range l.list {
		out[i] = *e
	}
	return out
}

func (l *eventLog[T]) update(e *T, change func(*T)) {
	l.mu.Lock()
	change(e)
	l.mu.Unlock()
}

// get copies one entry.
func (l *eventLog[T]) get(e *T) T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *e
}
