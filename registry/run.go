package registry

import (
	"context"
	"errors"
	"sync"
	"time"
)

func (r *registry) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("registry: Run is already running")
	}
	defer r.running.Store(false)

	var wg sync.WaitGroup
	defer wg.Wait()
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A crashed subscription leaves the waits to their polls (PollMax apart at worst).
	wg.Go(r.opts.Guard.Func("registry", func() { r.store.subscribe(subCtx, r.wake, r.wakeAll) }))

	refresh := time.NewTimer(r.opts.Refresh)
	defer refresh.Stop()
	health := time.NewTicker(r.opts.HealthInterval)
	defer health.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
			r.round(func() {
				if err := r.refresh(ctx, false); err != nil {
					r.log.Warn("refresh failed, retried when the store answers", "error", err)
				} else if err := r.gc(ctx); err != nil {
					r.log.Warn("gc failed", "error", err)
				}
			})
			refresh.Reset(r.opts.Refresh)
		case <-health.C:
			r.round(func() {
				if r.checkHealth(ctx) {
					refresh.Reset(r.opts.Refresh)
				}
			})
		}
	}
}

// round runs one round of Run: a panic in it ends that round only (the store is then written
// again as after a failure), so this edge's entries do not expire for one bad round.
func (r *registry) round(f func()) {
	defer r.opts.Guard.Recover("registry", func(bool) { r.rewrite.Store(true) })
	f()
}

// checkHealth probes the store. If a store operation failed since the last full write, or the
// store no longer has an entry this edge wrote (FLUSHALL, a restart or a failover to an empty
// replica), it writes everything again at once, rather than at the next refresh, and announces
// it so that waiting edges look. It reports whether it did.
func (r *registry) checkHealth(ctx context.Context) bool {
	r.m.ops.WithLabelValues(opPing).Inc()
	agentID, gen := r.probeTarget()
	pctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	present, err := r.store.probe(pctx, r.opts.Self, agentID)
	cancel()
	if err != nil {
		_ = r.storeError(ctx, opPing, "ping", err)
		return false
	}
	r.storeOK()
	if !present && r.unchangedSince(agentID, gen) {
		r.log.Warn("the store lost this edge's entries, writing them again", "missing_agent_id", agentID)
		r.rewrite.Store(true)
	}
	if !r.rewrite.Swap(false) {
		return false
	}
	if err := r.refresh(ctx, true); err != nil {
		r.log.Warn("writing everything again failed, retried", "error", err)
		return false
	}
	r.log.Info("agent registry entries written again")
	return true
}

// probeTarget picks an agent (map order makes it random) whose latest state is in the store.
// Agents with a connection in its unregister debounce are left out: other edges may rightly
// have forgotten that connection, and a rewrite would bring it back.
func (r *registry) probeTarget() (agentID string, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range r.held {
		if len(a.conns) > 0 && len(a.leaving) == 0 && a.written == a.gen {
			return id, a.gen
		}
	}
	return "", 0
}

func (r *registry) unchangedSince(agentID string, gen uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.held[agentID]
	return a != nil && a.gen == gen && a.written == gen
}
