package registry

import (
	"context"
	"maps"
	"slices"
)

// writeBatch bounds how many agents one store write carries, so a refresh of many agents is a
// series of moderate transactions rather than one huge one.
const writeBatch = 256

// maxRewrites bounds how often one write chases local changes that keep arriving; whatever is
// still newer after that is left to the run loop.
const maxRewrites = 3

// write stores what this edge holds of agentIDs, counted as op.
func (r *registry) write(ctx context.Context, op string, agentIDs []string, publish bool) error {
	r.m.ops.WithLabelValues(op).Inc()
	sctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	if err := r.flush(sctx, agentIDs, publish); err != nil {
		// Even when the caller went away: the store may now lag the local truth.
		r.rewrite.Store(true)
		return r.storeError(ctx, op, op+" "+describeIDs(agentIDs), err)
	}
	r.storeOK()
	return nil
}

// flush writes snapshots of agentIDs until the store holds the newest local truth of each.
func (r *registry) flush(ctx context.Context, agentIDs []string, publish bool) error {
	for range maxRewrites {
		ups := r.snapshot(agentIDs)
		if len(ups) == 0 {
			return nil
		}
		if err := r.store.write(ctx, r.opts.Self, ups, r.opts.Now().Add(r.opts.TTL), publish); err != nil {
			return err
		}
		agentIDs = r.written(ups)
	}
	if len(agentIDs) > 0 {
		r.rewrite.Store(true)
	}
	return nil
}

func (r *registry) snapshot(agentIDs []string) []agentUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	ups := make([]agentUpdate, 0, len(agentIDs))
	for _, id := range agentIDs {
		a := r.held[id]
		if a == nil {
			continue
		}
		u := agentUpdate{agentID: id, gen: a.gen, conns: make([]ConnInfo, 0, len(a.conns))}
		projects := make(map[string]struct{})
		for _, c := range a.conns {
			u.conns = append(u.conns, c)
			if c.ProjectID != "" {
				projects[c.ProjectID] = struct{}{}
			}
		}
		sortConns(u.conns)
		u.projectIDs = slices.Sorted(maps.Keys(projects))
		ups = append(ups, u)
	}
	return ups
}

// written records that ups landed in the store. It forgets agents whose removal landed and
// returns the agents that changed while the write was under way, to be written again.
func (r *registry) written(ups []agentUpdate) (changed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range ups {
		a := r.held[u.agentID]
		switch {
		case a == nil:
		case a.gen != u.gen:
			changed = append(changed, u.agentID)
		case len(a.conns) == 0:
			delete(r.held, u.agentID)
		default:
			a.written = u.gen
		}
	}
	return changed
}

// refresh writes everything this edge holds again, in batches: it extends the expiry, and it
// restores entries the store lost (FLUSHALL, restart, failover to an empty replica) or that
// failed to be written or removed before.
func (r *registry) refresh(ctx context.Context, publish bool) error {
	ids := r.heldIDs()
	for batch := range slices.Chunk(ids, writeBatch) {
		if err := r.write(ctx, opRefresh, batch, publish); err != nil {
			return err
		}
	}
	r.log.Debug("refreshed", "agents", len(ids))
	return nil
}

// gc drops expired entries of other edges from the keys this edge writes (reading them is enough:
// reads clean what they find expired). Keys nobody writes any more expire by themselves.
func (r *registry) gc(ctx context.Context) error {
	ids := r.heldIDs()
	projects := make(map[string]struct{})
	for _, c := range r.localConns(func(ConnInfo) bool { return true }) {
		if c.ProjectID != "" {
			projects[c.ProjectID] = struct{}{}
		}
	}
	r.m.ops.WithLabelValues(opGC).Inc()
	for batch := range slices.Chunk(ids, writeBatch) {
		sctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		_, err := r.store.agents(sctx, batch)
		cancel()
		if err != nil {
			return r.storeError(ctx, opGC, "gc", err)
		}
	}
	for p := range projects {
		sctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		_, err := r.store.project(sctx, p)
		cancel()
		if err != nil {
			return r.storeError(ctx, opGC, "gc", err)
		}
	}
	return nil
}

func (r *registry) heldIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.held))
}

func describeIDs(ids []string) string {
	switch len(ids) {
	case 0:
		return "no agents"
	case 1:
		return "agent " + ids[0]
	default:
		return "agents " + ids[0] + " and others"
	}
}
