package registry

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// waitLoop looks for one agent on behalf of every request waiting for it in this process, so a
// thousand waiting requests cost one lookup per wake-up, not a thousand.
type waitLoop struct {
	agentID string
	wake    chan struct{} // capacity 1: a wake-up during a lookup is kept, not lost
	done    chan struct{} // closed with conns or err set
	cancel  context.CancelFunc

	// guarded by registry.wmu
	refs    int
	closed  bool
	conns   []ConnInfo
	err     error
	lastErr error // of the latest lookup, reported to waiters whose ctx ends
}

func (r *registry) Wait(ctx context.Context, agentID string) ([]ConnInfo, error) {
	if !validID(agentID) {
		return nil, fmt.Errorf("wait: %w: agent id %q", ErrInvalidID, agentID)
	}
	l, err := r.joinWait(agentID)
	if err != nil {
		return nil, fmt.Errorf("wait for agent %q: %w", agentID, err)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
	}
	conns, err, lastErr := r.leaveWait(l)
	if lastErr == nil && !r.Healthy() {
		// The loop's lookup may still be stuck on a store that stopped answering.
		lastErr = ErrUnavailable
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("wait for agent %q: %w", agentID, err)
	case conns != nil:
		return conns, nil
	case lastErr != nil:
		return nil, fmt.Errorf("wait for agent %q: %w (last lookup: %w)", agentID, ctx.Err(), lastErr)
	default:
		return nil, fmt.Errorf("wait for agent %q: %w", agentID, ctx.Err())
	}
}

func (r *registry) joinWait(agentID string) (*waitLoop, error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.waitsClosed != nil {
		return nil, r.waitsClosed
	}
	l := r.loops[agentID]
	if l == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l = &waitLoop{agentID: agentID, wake: make(chan struct{}, 1), done: make(chan struct{}), cancel: cancel}
		r.loops[agentID] = l
		r.m.loopsStarted.Inc()
		go func() {
			// A crashed loop ends its wait as an unavailable store does: the waiters get 503.
			defer r.opts.Guard.Recover("registry", func(bool) {
				r.finishWait(l, nil, fmt.Errorf("%w: its wait loop crashed (a contained panic)", ErrUnavailable))
			})
			r.waitLoop(ctx, l)
		}()
	}
	l.refs++
	r.m.waiters.Inc()
	return l, nil
}

// leaveWait drops one waiter and stops the loop when it was the last one.
func (r *registry) leaveWait(l *waitLoop) (conns []ConnInfo, err, lastErr error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	l.refs--
	r.m.waiters.Dec()
	if l.closed {
		return slices.Clone(l.conns), l.err, nil
	}
	if l.refs == 0 {
		l.closed = true
		delete(r.loops, l.agentID)
		l.cancel()
	}
	return nil, nil, l.lastErr
}

func (r *registry) waitLoop(ctx context.Context, l *waitLoop) {
	delay := r.opts.PollMin
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		conns, err := r.Lookup(ctx, l.agentID)
		if len(conns) > 0 {
			r.finishWait(l, conns, nil)
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.wmu.Lock()
		l.lastErr = err
		r.wmu.Unlock()

		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-timer.C:
			delay = min(2*delay, r.opts.PollMax)
		}
	}
}

func (r *registry) finishWait(l *waitLoop, conns []ConnInfo, err error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.finishWaitLocked(l, conns, err)
}

func (r *registry) finishWaitLocked(l *waitLoop, conns []ConnInfo, err error) {
	if l.closed {
		return
	}
	l.closed = true
	l.conns, l.err = conns, err
	if r.loops[l.agentID] == l {
		delete(r.loops, l.agentID)
	}
	l.cancel()
	close(l.done)
}

// closeWaits ends every wait loop with err and refuses new waits.
func (r *registry) closeWaits(err error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.waitsClosed = err
	for _, l := range r.loops {
		r.finishWaitLocked(l, nil, err)
	}
}

// wake makes agentID's wait loop, if any, look again now.
func (r *registry) wake(agentID string) {
	r.wmu.Lock()
	l := r.loops[agentID]
	r.wmu.Unlock()
	if l != nil {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// wakeAll makes every wait loop look again, after a gap in which connect events may have been lost.
func (r *registry) wakeAll() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	for _, l := range r.loops {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}
