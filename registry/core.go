package registry

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// registry is the implementation both Memory and Redis share: the local truth
// (what this edge holds), debounced unregistration, wait loops and the run loop. Only the store
// differs.
//
// Locks: mu guards the local truth and wmu the wait loops; neither is ever held across store I/O.
// Writes are ordered by generations instead: every local change takes a new generation, and a
// writer whose snapshot turns out to be older than the local truth once its write has landed
// writes again, so the last write to land is always the newest.
type registry struct {
	opts  Options
	store store
	log   *slog.Logger
	m     *metrics

	mu       sync.Mutex
	held     map[string]*heldAgent
	seq      uint64
	draining bool

	wmu         sync.Mutex
	loops       map[string]*waitLoop
	waitsClosed error

	healthy atomic.Bool
	// rewrite is set when a store operation failed: the store may have lost or missed writes, so
	// everything is written again as soon as it answers.
	rewrite atomic.Bool
	running atomic.Bool
}

type heldAgent struct {
	conns   map[string]ConnInfo // by connection id, including leaving ones
	leaving map[string]*leave   // connections whose Unregister waits out the debounce
	gen     uint64              // of the latest local change
	written uint64              // gen that last landed in the store
}

type leave struct{ timer *time.Timer }

func newRegistry(st store, opts Options, backend string, log *slog.Logger) (*registry, error) {
	m, err := newMetrics(opts.Registerer, backend)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &registry{
		opts:  opts,
		store: st,
		log:   log.With("component", "registry", "backend", backend),
		m:     m,
		held:  make(map[string]*heldAgent),
		loops: make(map[string]*waitLoop),
	}
	r.healthy.Store(true)
	return r, nil
}

func (r *registry) Register(ctx context.Context, c ConnInfo) error {
	if err := validConnInfo(c); err != nil {
		return err
	}
	c.Edge = r.opts.Self
	if c.ConnectedAt.IsZero() {
		c.ConnectedAt = r.opts.Now()
	}
	r.mu.Lock()
	if r.draining {
		r.mu.Unlock()
		return fmt.Errorf("register agent %q: %w", c.AgentID, ErrDraining)
	}
	a := r.held[c.AgentID]
	if a == nil {
		a = &heldAgent{conns: make(map[string]ConnInfo), leaving: make(map[string]*leave)}
		r.held[c.AgentID] = a
	}
	if l := a.leaving[c.ConnectionID]; l != nil {
		l.timer.Stop()
		delete(a.leaving, c.ConnectionID)
	}
	a.conns[c.ConnectionID] = c
	a.gen = r.nextGen()
	r.mu.Unlock()

	r.wake(c.AgentID)
	return r.write(ctx, opRegister, []string{c.AgentID}, true)
}

func (r *registry) Unregister(ctx context.Context, c ConnInfo) error {
	if err := validConnInfo(c); err != nil {
		return err
	}
	r.mu.Lock()
	a := r.held[c.AgentID]
	if a == nil || a.leaving[c.ConnectionID] != nil {
		r.mu.Unlock()
		return nil
	}
	if _, ok := a.conns[c.ConnectionID]; !ok {
		r.mu.Unlock()
		return nil
	}
	if r.opts.UnregisterDelay <= 0 {
		delete(a.conns, c.ConnectionID)
		a.gen = r.nextGen()
		r.mu.Unlock()
		return r.write(ctx, opUnregister, []string{c.AgentID}, false)
	}
	l := &leave{}
	a.leaving[c.ConnectionID] = l
	l.timer = time.AfterFunc(r.opts.UnregisterDelay, r.opts.Guard.Func("registry", func() { r.leave(c.AgentID, c.ConnectionID, l) }))
	r.mu.Unlock()
	return nil
}

// leave ends a debounced Unregister, unless a Register or Drain overtook it.
func (r *registry) leave(agentID, connID string, l *leave) {
	r.mu.Lock()
	a := r.held[agentID]
	if a == nil || a.leaving[connID] != l {
		r.mu.Unlock()
		return
	}
	delete(a.leaving, connID)
	delete(a.conns, connID)
	a.gen = r.nextGen()
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	if err := r.write(ctx, opUnregister, []string{agentID}, false); err != nil {
		r.log.Warn("unregister failed, retried when the store answers", "agent_id", agentID, "error", err)
	}
}

func (r *registry) Drain(ctx context.Context) error {
	r.mu.Lock()
	r.draining = true
	ids := make([]string, 0, len(r.held))
	for id, a := range r.held {
		for _, l := range a.leaving {
			l.timer.Stop()
		}
		clear(a.leaving)
		clear(a.conns)
		a.gen = r.nextGen()
		ids = append(ids, id)
	}
	r.mu.Unlock()
	r.closeWaits(ErrDraining)
	return r.write(ctx, opDrain, ids, false)
}

func (r *registry) Healthy() bool { return r.healthy.Load() }

func (r *registry) Lookup(ctx context.Context, agentID string) ([]ConnInfo, error) {
	if !validID(agentID) {
		return nil, fmt.Errorf("lookup: %w: agent id %q", ErrInvalidID, agentID)
	}
	r.m.ops.WithLabelValues(opLookup).Inc()
	sctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	stored, err := r.store.agents(sctx, []string{agentID})
	local := r.localAgent(agentID)
	if err != nil {
		return local, r.storeError(ctx, opLookup, "lookup agent "+agentID, err)
	}
	r.storeOK()
	return r.merge(stored, local, func(ConnInfo) bool { return true }), nil
}

// List returns the live connections of up to limit agents across the fleet, for the status page.
func (r *registry) List(ctx context.Context, limit int) ([]ConnInfo, error) {
	return r.agentsOf(ctx, opList, "list agents", func(ConnInfo) bool { return true },
		func(ctx context.Context) ([]string, error) { return r.store.agentIDs(ctx, limit) })
}

func (r *registry) ByProject(ctx context.Context, projectID string) ([]ConnInfo, error) {
	if !validID(projectID) {
		return nil, fmt.Errorf("by project: %w: project id %q", ErrInvalidID, projectID)
	}
	return r.agentsOf(ctx, opByProject, "connections of project "+projectID,
		func(c ConnInfo) bool { return c.ProjectID == projectID },
		func(ctx context.Context) ([]string, error) { return r.store.project(ctx, projectID) })
}

// agentsOf is the live connections of the agents ids finds in the store, with this edge's own
// that keep says (those also when the store cannot be read).
func (r *registry) agentsOf(ctx context.Context, op, what string, keep func(ConnInfo) bool, ids func(context.Context) ([]string, error)) ([]ConnInfo, error) {
	r.m.ops.WithLabelValues(op).Inc()
	sctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	local := r.localConns(keep)
	found, err := ids(sctx)
	var stored map[string]map[string][]ConnInfo
	if err == nil && len(found) > 0 {
		stored, err = r.store.agents(sctx, found)
	}
	if err != nil {
		return local, r.storeError(ctx, op, what, err)
	}
	r.storeOK()
	return r.merge(stored, local, keep), nil
}

func (r *registry) Forget(ctx context.Context, stale ConnInfo) error {
	if err := validConnInfo(stale); err != nil {
		return err
	}
	if stale.Edge == "" || stale.Edge == r.opts.Self {
		return nil
	}
	r.m.ops.WithLabelValues(opForget).Inc()
	sctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	if err := r.store.forget(sctx, stale); err != nil {
		return r.storeError(ctx, opForget, "forget agent "+stale.AgentID+" on "+stale.Edge, err)
	}
	r.storeOK()
	return nil
}

// merge joins the store's entries of other edges with this edge's own local truth, which wins
// over whatever the store says about this edge.
func (r *registry) merge(stored map[string]map[string][]ConnInfo, local []ConnInfo, keep func(ConnInfo) bool) []ConnInfo {
	out := local
	for agentID, byEdge := range stored {
		for edge, conns := range byEdge {
			if edge == r.opts.Self {
				continue
			}
			for _, c := range conns {
				c.AgentID, c.Edge = agentID, edge
				if keep(c) {
					out = append(out, c)
				}
			}
		}
	}
	sortConns(out)
	return out
}

// localAgent returns this edge's live connections of agentID (not those waiting out the debounce).
func (r *registry) localAgent(agentID string) []ConnInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.held[agentID]
	if a == nil {
		return nil
	}
	out := make([]ConnInfo, 0, len(a.conns))
	for id, c := range a.conns {
		if a.leaving[id] == nil {
			out = append(out, c)
		}
	}
	return out
}

// localConns returns this edge's live connections that keep accepts, scanning all of them.
func (r *registry) localConns(keep func(ConnInfo) bool) []ConnInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ConnInfo
	for _, a := range r.held {
		for id, c := range a.conns {
			if a.leaving[id] == nil && keep(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

func sortConns(cs []ConnInfo) {
	slices.SortFunc(cs, func(a, b ConnInfo) int {
		return cmp.Or(cmp.Compare(a.AgentID, b.AgentID), a.ConnectedAt.Compare(b.ConnectedAt),
			cmp.Compare(a.Edge, b.Edge), cmp.Compare(a.ConnectionID, b.ConnectionID))
	})
}

func (r *registry) nextGen() uint64 {
	r.seq++
	return r.seq
}

// storeError counts a failed store operation and wraps it; a caller that went away is not a
// store failure.
func (r *registry) storeError(ctx context.Context, op, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	r.m.errs.WithLabelValues(op).Inc()
	r.rewrite.Store(true)
	if r.healthy.Swap(false) {
		r.m.healthy.Set(0)
		r.log.Warn("agent registry store unavailable", "op", op, "error", err)
	}
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
}

func (r *registry) storeOK() {
	if !r.healthy.Swap(true) {
		r.m.healthy.Set(1)
		r.log.Info("agent registry store available again")
	}
}
