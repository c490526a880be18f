package registry

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// MemoryStore is the in-memory backing store of Memory. One registry on a private store
// is the single-instance default; several registries sharing one store behave like several edges
// sharing one Redis (expiry and connect events included), which is how tests use it.
type MemoryStore struct {
	mu       sync.Mutex
	agents   map[string]map[string]memoryEntry // agent id -> edge -> entry
	projects map[string]map[string]time.Time   // project id -> agent id -> expiry
	subs     map[*memorySub]struct{}
}

type memoryEntry struct {
	expiresAt time.Time
	conns     []ConnInfo
}

type memorySub struct{ onEvent func(string) }

// NewMemoryStore makes an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		agents:   make(map[string]map[string]memoryEntry),
		projects: make(map[string]map[string]time.Time),
		subs:     make(map[*memorySub]struct{}),
	}
}

// Memory is the Registry of a single edge instance, or of several sharing one MemoryStore.
type Memory struct{ *registry }

// NewMemory makes a registry on st (nil: a private store). Its entries expire like Redis
// ones, so Run must run.
func NewMemory(st *MemoryStore, opts Options, log *slog.Logger) (*Memory, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if st == nil {
		st = NewMemoryStore()
	}
	r, err := newRegistry(&memoryView{st: st, now: opts.Now}, opts, "memory", log)
	if err != nil {
		return nil, err
	}
	return &Memory{r}, nil
}

// memoryView is one registry's view of a shared MemoryStore: the store with that registry's clock.
type memoryView struct {
	st  *MemoryStore
	now func() time.Time
}

func (v *memoryView) write(_ context.Context, edge string, ups []agentUpdate, expiresAt time.Time, publish bool) error {
	s := v.st
	s.mu.Lock()
	var events []string
	for _, u := range ups {
		byEdge := s.agents[u.agentID]
		if len(u.conns) == 0 {
			delete(byEdge, edge)
			if len(byEdge) == 0 {
				delete(s.agents, u.agentID)
			}
			continue
		}
		if byEdge == nil {
			byEdge = make(map[string]memoryEntry)
			s.agents[u.agentID] = byEdge
		}
		byEdge[edge] = memoryEntry{expiresAt: expiresAt, conns: slices.Clone(u.conns)}
		for _, p := range u.projectIDs {
			if s.projects[p] == nil {
				s.projects[p] = make(map[string]time.Time)
			}
			s.projects[p][u.agentID] = expiresAt
		}
		if publish {
			events = append(events, u.agentID)
		}
	}
	subs := make([]*memorySub, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	for _, id := range events {
		for _, sub := range subs {
			sub.onEvent(id)
		}
	}
	return nil
}

func (v *memoryView) agents(_ context.Context, agentIDs []string) (map[string]map[string][]ConnInfo, error) {
	s, now := v.st, v.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string][]ConnInfo, len(agentIDs))
	for _, id := range agentIDs {
		for edge, e := range s.agents[id] {
			if !now.Before(e.expiresAt) {
				delete(s.agents[id], edge)
				continue
			}
			if out[id] == nil {
				out[id] = make(map[string][]ConnInfo)
			}
			out[id][edge] = slices.Clone(e.conns)
		}
		if len(s.agents[id]) == 0 {
			delete(s.agents, id)
		}
	}
	return out, nil
}

func (v *memoryView) agentIDs(_ context.Context, limit int) ([]string, error) {
	v.st.mu.Lock()
	defer v.st.mu.Unlock()
	out := make([]string, 0, min(limit, len(v.st.agents)))
	for id := range v.st.agents {
		if len(out) == limit {
			break
		}
		out = append(out, id)
	}
	return out, nil
}

func (v *memoryView) project(_ context.Context, projectID string) ([]string, error) {
	s, now := v.st, v.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, exp := range s.projects[projectID] {
		if !now.Before(exp) {
			delete(s.projects[projectID], id)
			continue
		}
		ids = append(ids, id)
	}
	if len(s.projects[projectID]) == 0 {
		delete(s.projects, projectID)
	}
	return ids, nil
}

func (v *memoryView) forget(_ context.Context, stale ConnInfo) error {
	s := v.st
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.agents[stale.AgentID][stale.Edge]
	if !ok {
		return nil
	}
	e.conns = slices.DeleteFunc(slices.Clone(e.conns), func(c ConnInfo) bool { return c.ConnectionID == stale.ConnectionID })
	if len(e.conns) == 0 {
		delete(s.agents[stale.AgentID], stale.Edge)
		return nil
	}
	s.agents[stale.AgentID][stale.Edge] = e
	return nil
}

func (v *memoryView) probe(_ context.Context, edge, agentID string) (bool, error) {
	if agentID == "" {
		return true, nil
	}
	v.st.mu.Lock()
	defer v.st.mu.Unlock()
	_, ok := v.st.agents[agentID][edge]
	return ok, nil
}

func (v *memoryView) subscribe(ctx context.Context, onEvent func(string), onSubscribed func()) {
	sub := &memorySub{onEvent: onEvent}
	v.st.mu.Lock()
	v.st.subs[sub] = struct{}{}
	v.st.mu.Unlock()
	onSubscribed()
	<-ctx.Done()
	v.st.mu.Lock()
	delete(v.st.subs, sub)
	v.st.mu.Unlock()
}
