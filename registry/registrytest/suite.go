package registrytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/registry"
)

// Edge URLs of the simulated instances.
const (
	EdgeA = "http://edge-a.internal:8081"
	EdgeB = "http://edge-b.internal:8081"
	EdgeC = "http://edge-c.internal:8081"
)

// MaxWakeDelay is how soon after a Register on another edge a waiting Wait must return. The
// safety-net poll is set far longer in those cases, so only the connect event can meet it.
const MaxWakeDelay = time.Second

// FastOptions are timings short enough for tests: entries live 2s and are refreshed every 500ms.
func FastOptions() registry.Options {
	return registry.Options{
		TTL:             2 * time.Second,
		Refresh:         500 * time.Millisecond,
		UnregisterDelay: 300 * time.Millisecond,
		PollMin:         200 * time.Millisecond,
		PollMax:         time.Second,
		Timeout:         time.Second,
		HealthInterval:  100 * time.Millisecond,
	}
}

// Conn is a connection of agentID with every field set.
func Conn(agentID, projectID, connID string) registry.ConnInfo {
	return registry.ConnInfo{
		AgentID:      agentID,
		ProjectID:    projectID,
		ConnectionID: connID,
		Version:      "v1.2.3",
		Commit:       "abc123",
		PodNamespace: "ns-" + agentID,
		PodName:      "pod-" + connID,
		ConnectedAt:  time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// Run checks the registry contract. newBackend is called once per case, with that
// case's t, and returns how to make the edges of that case; they share one backend.
func Run(t *testing.T, newBackend func(t *testing.T) NewEdge) {
	cases := []struct {
		name string
		run  func(t *testing.T, newEdge NewEdge)
	}{
		{"RegisterLookupUnregister", testRegisterLookupUnregister},
		{"ReconnectWithinDebounce", testReconnectWithinDebounce},
		{"TwoEdgesHoldOneAgent", testTwoEdgesHoldOneAgent},
		{"ByProject", testByProject},
		{"List", testList},
		{"ExpiryWhenEdgeStopsRefreshing", testExpiry},
		{"WaitWakesOnRegister", testWaitWakes},
		{"WaitWakesOnLocalRegister", testWaitWakesLocal},
		{"WaitReturnsAtOnceWhenConnected", testWaitConnected},
		{"WaitTimesOut", testWaitTimesOut},
		{"WaitersShareOneLoop", testWaitersShareOneLoop},
		{"Forget", testForget},
		{"Drain", testDrain},
		{"InvalidIDs", testInvalidIDs},
		{"HealthAndMetrics", testHealthAndMetrics},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newBackend(t))
		})
	}
}

func testRegisterLookupUnregister(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	opts.UnregisterDelay = time.Second
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx := context.Background()
	c := Conn("agent-1", "proj-1", "conn-1")
	if err := a.Register(ctx, c); err != nil {
		t.Fatalf("register: %v", err)
	}
	want := c
	want.Edge = EdgeA
	for _, e := range []*Edge{a, b} {
		got, err := e.Lookup(ctx, "agent-1")
		if err != nil {
			t.Fatalf("%s lookup: %v", e.Self, err)
		}
		if !sameConns(got, []registry.ConnInfo{want}) {
			t.Errorf("%s lookup: got %s, want %s", e.Self, describe(got), describe([]registry.ConnInfo{want}))
		}
	}
	if got, err := b.Lookup(ctx, "agent-unknown"); err != nil || len(got) != 0 {
		t.Errorf("lookup of an unknown agent: got %s, %v, want none, nil", describe(got), err)
	}

	unregistered := time.Now()
	if err := a.Unregister(ctx, c); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	if got, err := a.Lookup(ctx, "agent-1"); err != nil || len(got) != 0 {
		t.Errorf("holder's lookup right after unregister: got %s, %v, want none (its own truth), nil", describe(got), err)
	}
	got, err := b.Lookup(ctx, "agent-1")
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	if time.Since(unregistered) < opts.UnregisterDelay/2 && len(got) != 1 {
		t.Errorf("other edge's lookup within the debounce: got %s, want the connection still listed", describe(got))
	}
	poll.UntilState(t, 5*time.Second, "agent-1 gone after unregister", func() (bool, string) {
		got, err := b.Lookup(ctx, "agent-1")
		return err == nil && len(got) == 0, fmt.Sprintf("after unregister: %s, %v", describe(got), err)
	})
}

func testReconnectWithinDebounce(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx := context.Background()
	c1, c2 := Conn("agent-1", "", "conn-1"), Conn("agent-1", "", "conn-2")
	if err := a.Register(ctx, c1); err != nil {
		t.Fatalf("register: %v", err)
	}
	if err := a.Unregister(ctx, c1); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	if err := a.Register(ctx, c2); err != nil {
		t.Fatalf("register again: %v", err)
	}
	poll.UntilState(t, 5*time.Second, "agent-1 on its new connection", func() (bool, string) {
		got, err := b.Lookup(ctx, "agent-1")
		if err != nil || len(got) == 0 {
			t.Fatalf("agent vanished for other edges while it reconnected: %s, %v", describe(got), err)
		}
		return len(got) == 1 && got[0].ConnectionID == "conn-2", "connections: " + describe(got)
	})
}

func testTwoEdgesHoldOneAgent(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	c := StartEdge(t, newEdge, EdgeC, opts)
	ctx := context.Background()
	c1, c2 := Conn("agent-1", "proj-1", "conn-1"), Conn("agent-1", "proj-1", "conn-2")
	c2.ConnectedAt = c1.ConnectedAt.Add(time.Second)
	if err := a.Register(ctx, c1); err != nil {
		t.Fatalf("register on a: %v", err)
	}
	if err := b.Register(ctx, c2); err != nil {
		t.Fatalf("register on b: %v", err)
	}
	c1.Edge, c2.Edge = EdgeA, EdgeB
	for _, e := range []*Edge{a, b, c} {
		got, err := e.Lookup(ctx, "agent-1")
		if err != nil {
			t.Fatalf("%s lookup: %v", e.Self, err)
		}
		if !sameConns(got, []registry.ConnInfo{c1, c2}) {
			t.Errorf("%s lookup: got %s, want both edges", e.Self, describe(got))
		}
	}
}

// List sees every agent on every edge, each connection under its holder, and stops at its limit.
func testList(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx := context.Background()
	c1, c2, c3 := Conn("agent-1", "proj-1", "conn-1"), Conn("agent-2", "proj-1", "conn-2"), Conn("agent-3", "proj-2", "conn-3")
	for _, reg := range []struct {
		e *Edge
		c registry.ConnInfo
	}{{a, c1}, {b, c2}, {b, c3}} {
		if err := reg.e.Register(ctx, reg.c); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	c1.Edge, c2.Edge, c3.Edge = EdgeA, EdgeB, EdgeB
	got, err := a.List(ctx, 100)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if !sameConns(got, []registry.ConnInfo{c1, c2, c3}) {
		t.Errorf("list: got %s, want all three under their holders", describe(got))
	}
	// a's own agent always, and at most one more from the store.
	if got, err := a.List(ctx, 1); err != nil || len(slices.Compact(agentIDs(got))) > 2 || !slices.Contains(agentIDs(got), "agent-1") {
		t.Errorf("list with limit 1: got %s, %v; want agent-1 and at most one other", describe(got), err)
	}
}

func testByProject(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	c := StartEdge(t, newEdge, EdgeC, opts)
	ctx := context.Background()
	regs := []struct {
		e    *Edge
		conn registry.ConnInfo
	}{
		{a, Conn("agent-1", "proj-1", "conn-1")},
		{b, Conn("agent-2", "proj-1", "conn-2")},
		{a, Conn("agent-3", "proj-2", "conn-3")},
		{b, Conn("agent-4", "", "conn-4")},
	}
	for _, r := range regs {
		if err := r.e.Register(ctx, r.conn); err != nil {
			t.Fatalf("register %s: %v", r.conn.AgentID, err)
		}
	}
	tests := []struct {
		project string
		want    []string
	}{
		{"proj-1", []string{"agent-1", "agent-2"}},
		{"proj-2", []string{"agent-3"}},
		{"proj-none", nil},
	}
	for _, tt := range tests {
		for _, e := range []*Edge{a, c} {
			got, err := e.ByProject(ctx, tt.project)
			if err != nil {
				t.Fatalf("%s by project %s: %v", e.Self, tt.project, err)
			}
			if ids := agentIDs(got); !slices.Equal(ids, tt.want) {
				t.Errorf("%s by project %s: got %v, want %v", e.Self, tt.project, ids, tt.want)
			}
		}
	}
	if err := a.Unregister(ctx, regs[0].conn); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	poll.UntilState(t, 5*time.Second, "only agent-2 by project after unregister", func() (bool, string) {
		got, err := c.ByProject(ctx, "proj-1")
		ids := agentIDs(got)
		return err == nil && slices.Equal(ids, []string{"agent-2"}), fmt.Sprintf("by project after unregister: %v, %v", ids, err)
	})
}

func testExpiry(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	opts.TTL, opts.Refresh = time.Second, 250*time.Millisecond
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx := context.Background()
	if err := a.Register(ctx, Conn("agent-1", "proj-1", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}
	// While the holder refreshes, its entry outlives the TTL.
	for end := time.Now().Add(2 * opts.TTL); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got, err := b.Lookup(ctx, "agent-1"); err != nil || len(got) != 1 {
			t.Fatalf("while the holder refreshes: got %s, %v, want the connection", describe(got), err)
		}
	}
	a.Stop(t)
	poll.UntilState(t, 3*opts.TTL+2*time.Second, "agent-1 gone after its holder stopped", func() (bool, string) {
		got, err := b.Lookup(ctx, "agent-1")
		byProject, perr := b.ByProject(ctx, "proj-1")
		return err == nil && perr == nil && len(got) == 0 && len(byProject) == 0,
			fmt.Sprintf("after the holder stopped: lookup %s, %v; by project %s, %v", describe(got), err, describe(byProject), perr)
	})
}

// waitResult is what a Wait in a goroutine returned, and when.
type waitResult struct {
	conns []registry.ConnInfo
	err   error
	at    time.Time
}

func startWait(ctx context.Context, e *Edge, agentID string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		conns, err := e.Wait(ctx, agentID)
		ch <- waitResult{conns, err, time.Now()}
	}()
	return ch
}

// waitingFor polls until e has n waiters and its wait loops did their first lookup, so what
// follows can only be noticed by a wake-up.
func waitingFor(t *testing.T, e *Edge, n int, lookupsBefore float64) {
	t.Helper()
	poll.UntilState(t, 5*time.Second, "the waiters counted", func() (bool, string) {
		w := e.Metric(t, "edge_registry_waiters", "")
		l := e.Metric(t, "edge_registry_operations_total", "lookup")
		return w == float64(n) && l > lookupsBefore, fmt.Sprintf("waiters %v (want %d), lookups %v (want > %v)", w, n, l, lookupsBefore)
	})
}

func receive(t *testing.T, ch <-chan waitResult, timeout time.Duration) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		t.Fatalf("Wait did not return within %v", timeout)
		return waitResult{}
	}
}

func testWaitWakes(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	opts.PollMin, opts.PollMax = time.Minute, time.Minute
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var delays []time.Duration
	for i := range 5 {
		agentID := fmt.Sprintf("agent-%d", i)
		lookups := b.Metric(t, "edge_registry_operations_total", "lookup")
		ch := startWait(ctx, b, agentID)
		waitingFor(t, b, 1, lookups)
		registered := time.Now()
		if err := a.Register(ctx, Conn(agentID, "", "conn-1")); err != nil {
			t.Fatalf("register: %v", err)
		}
		r := receive(t, ch, 10*time.Second)
		if r.err != nil || len(r.conns) != 1 || r.conns[0].Edge != EdgeA {
			t.Fatalf("wait: got %s, %v, want the connection on %s", describe(r.conns), r.err, EdgeA)
		}
		delays = append(delays, r.at.Sub(registered))
	}
	slices.Sort(delays)
	t.Logf("wake-up delay from Register on another edge to Wait returning: min %v, median %v, max %v",
		delays[0], delays[len(delays)/2], delays[len(delays)-1])
	if worst := delays[len(delays)-1]; worst > MaxWakeDelay {
		t.Errorf("wake-up delay: got %v, want at most %v", worst, MaxWakeDelay)
	}
}

func testWaitWakesLocal(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	opts.PollMin, opts.PollMax = time.Minute, time.Minute
	a := StartEdge(t, newEdge, EdgeA, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := startWait(ctx, a, "agent-1")
	waitingFor(t, a, 1, 0)
	registered := time.Now()
	if err := a.Register(ctx, Conn("agent-1", "", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}
	r := receive(t, ch, 10*time.Second)
	if r.err != nil || len(r.conns) != 1 {
		t.Fatalf("wait: got %s, %v, want the connection", describe(r.conns), r.err)
	}
	if d := r.at.Sub(registered); d > MaxWakeDelay {
		t.Errorf("wake-up delay on the same edge: got %v, want at most %v", d, MaxWakeDelay)
	}
}

func testWaitConnected(t *testing.T, newEdge NewEdge) {
	a := StartEdge(t, newEdge, EdgeA, FastOptions())
	b := StartEdge(t, newEdge, EdgeB, FastOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Register(ctx, Conn("agent-1", "", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}
	for _, e := range []*Edge{a, b} {
		got, err := e.Wait(ctx, "agent-1")
		if err != nil || len(got) != 1 {
			t.Errorf("%s wait for a connected agent: got %s, %v, want the connection", e.Self, describe(got), err)
		}
	}
}

func testWaitTimesOut(t *testing.T, newEdge NewEdge) {
	b := StartEdge(t, newEdge, EdgeB, FastOptions())
	const timeout = 300 * time.Millisecond
	// start before the deadline is set: taken after it, the wait can end a hair under timeout.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	got, err := b.Wait(ctx, "agent-never")
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, registry.ErrUnavailable) || len(got) != 0 {
		t.Errorf("wait: got %s, %v, want nothing and a deadline error", describe(got), err)
	}
	if elapsed < timeout || elapsed > timeout+time.Second {
		t.Errorf("wait returned after %v, want about %v", elapsed, timeout)
	}
	if err == nil || !strings.Contains(err.Error(), "agent-never") {
		t.Errorf("wait error %v does not name the agent", err)
	}
	poll.UntilState(t, time.Second, "no waiter after the wait ended", func() (bool, string) {
		w := b.Metric(t, "edge_registry_waiters", "")
		return w == 0, fmt.Sprintf("waiters after the wait ended: %v", w)
	})
}

func testWaitersShareOneLoop(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	opts.PollMin, opts.PollMax = time.Minute, time.Minute
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 64
	var results []<-chan waitResult
	for range n {
		results = append(results, startWait(ctx, b, "agent-1"))
	}
	// One waiter gives up early; the others keep the loop.
	early, cancelEarly := context.WithCancel(ctx)
	earlyResult := startWait(early, b, "agent-1")
	waitingFor(t, b, n+1, 0)
	cancelEarly()
	if r := receive(t, earlyResult, 5*time.Second); !errors.Is(r.err, context.Canceled) {
		t.Errorf("waiter that gave up: got %v, want context.Canceled", r.err)
	}
	lookups := b.Metric(t, "edge_registry_operations_total", "lookup")

	if err := a.Register(ctx, Conn("agent-1", "", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}
	for i, ch := range results {
		r := receive(t, ch, 10*time.Second)
		if r.err != nil || len(r.conns) != 1 {
			t.Fatalf("waiter %d: got %s, %v, want the connection", i, describe(r.conns), r.err)
		}
	}
	if got := b.Metric(t, "edge_registry_wait_loops_started_total", ""); got != 1 {
		t.Errorf("wait loops started for %d waiters: got %v, want 1", n+1, got)
	}
	if got := b.Metric(t, "edge_registry_operations_total", "lookup") - lookups; got > 3 {
		t.Errorf("lookups to wake %d waiters: got %v, want at most 3", n, got)
	}
	if got := b.Metric(t, "edge_registry_waiters", ""); got != 0 {
		t.Errorf("waiters at the end: got %v, want 0", got)
	}
}

func testForget(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	// The holder's health probe would otherwise notice its missing entry and write it back at once.
	opts.HealthInterval = time.Minute
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx := context.Background()
	c1, c2 := Conn("agent-1", "", "conn-1"), Conn("agent-1", "", "conn-2")
	for _, c := range []registry.ConnInfo{c1, c2} {
		if err := a.Register(ctx, c); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	c1.Edge, c2.Edge = EdgeA, EdgeA

	if err := b.Forget(ctx, c1); err != nil {
		t.Fatalf("forget: %v", err)
	}
	if got, err := b.Lookup(ctx, "agent-1"); err != nil || !sameConns(got, []registry.ConnInfo{c2}) {
		t.Errorf("after forgetting conn-1: got %s, %v, want only conn-2", describe(got), err)
	}
	unknown := c2
	unknown.ConnectionID = "conn-unknown"
	if err := b.Forget(ctx, unknown); err != nil {
		t.Fatalf("forget an unknown connection: %v", err)
	}
	if got, err := b.Lookup(ctx, "agent-1"); err != nil || !sameConns(got, []registry.ConnInfo{c2}) {
		t.Errorf("after forgetting an unknown connection: got %s, %v, want conn-2 kept", describe(got), err)
	}
	// An edge's own connections are its truth: forgetting them there does nothing.
	if err := a.Forget(ctx, c2); err != nil {
		t.Fatalf("forget own: %v", err)
	}
	if got, err := b.Lookup(ctx, "agent-1"); err != nil || !sameConns(got, []registry.ConnInfo{c2}) {
		t.Errorf("after the holder forgot its own connection: got %s, %v, want conn-2 kept", describe(got), err)
	}
	if err := b.Forget(ctx, c2); err != nil {
		t.Fatalf("forget: %v", err)
	}
	if got, err := b.Lookup(ctx, "agent-1"); err != nil || len(got) != 0 {
		t.Errorf("after forgetting every connection: got %s, %v, want none", describe(got), err)
	}
	// The holder still believes it holds both: its next refresh writes them back.
	poll.UntilState(t, 2*opts.Refresh+2*time.Second, "both connections after the holder's refresh", func() (bool, string) {
		got, err := b.Lookup(ctx, "agent-1")
		return err == nil && sameConns(got, []registry.ConnInfo{c1, c2}), "after the holder's refresh: " + describe(got)
	})
}

func testDrain(t *testing.T, newEdge NewEdge) {
	opts := FastOptions()
	opts.UnregisterDelay = time.Minute
	a := StartEdge(t, newEdge, EdgeA, opts)
	b := StartEdge(t, newEdge, EdgeB, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []registry.ConnInfo{Conn("agent-1", "proj-1", "conn-1"), Conn("agent-2", "", "conn-2")} {
		if err := a.Register(ctx, c); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	// A pending (debounced) unregister must not outlive Drain.
	if err := a.Unregister(ctx, Conn("agent-2", "", "conn-2")); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	waiting := startWait(ctx, a, "agent-9")
	waitingFor(t, a, 1, 0)

	if err := a.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	for _, id := range []string{"agent-1", "agent-2"} {
		if got, err := b.Lookup(ctx, id); err != nil || len(got) != 0 {
			t.Errorf("lookup of %s after its holder drained: got %s, %v, want none", id, describe(got), err)
		}
	}
	if r := receive(t, waiting, 5*time.Second); !errors.Is(r.err, registry.ErrDraining) {
		t.Errorf("pending wait on the drained edge: got %v, want ErrDraining", r.err)
	}
	if err := a.Register(ctx, Conn("agent-3", "", "conn-3")); !errors.Is(err, registry.ErrDraining) {
		t.Errorf("register after drain: got %v, want ErrDraining", err)
	}
	if _, err := a.Wait(ctx, "agent-3"); !errors.Is(err, registry.ErrDraining) {
		t.Errorf("wait after drain: got %v, want ErrDraining", err)
	}
}

func testInvalidIDs(t *testing.T, newEdge NewEdge) {
	a := StartEdge(t, newEdge, EdgeA, FastOptions())
	ctx := context.Background()
	good := Conn("agent-1", "proj-1", "conn-1")
	bad := func(f func(*registry.ConnInfo)) registry.ConnInfo {
		c := good
		f(&c)
		return c
	}
	registers := []struct {
		name string
		conn registry.ConnInfo
	}{
		{"empty agent id", bad(func(c *registry.ConnInfo) { c.AgentID = "" })},
		{"agent id with a colon", bad(func(c *registry.ConnInfo) { c.AgentID = "a:b" })},
		{"agent id too long", bad(func(c *registry.ConnInfo) { c.AgentID = strings.Repeat("a", 65) })},
		{"project id with a slash", bad(func(c *registry.ConnInfo) { c.ProjectID = "p/1" })},
		{"empty connection id", bad(func(c *registry.ConnInfo) { c.ConnectionID = "" })},
	}
	for _, tt := range registers {
		t.Run(tt.name, func(t *testing.T) {
			if err := a.Register(ctx, tt.conn); !errors.Is(err, registry.ErrInvalidID) {
				t.Errorf("register: got %v, want ErrInvalidID", err)
			}
		})
	}
	queries := []struct {
		name string
		call func() error
	}{
		{"lookup empty", func() error { _, err := a.Lookup(ctx, ""); return err }},
		{"lookup with space", func() error { _, err := a.Lookup(ctx, "a b"); return err }},
		{"by project empty", func() error { _, err := a.ByProject(ctx, ""); return err }},
		{"wait empty", func() error { _, err := a.Wait(ctx, ""); return err }},
	}
	for _, tt := range queries {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, registry.ErrInvalidID) {
				t.Errorf("got %v, want ErrInvalidID", err)
			}
		})
	}
}

func testHealthAndMetrics(t *testing.T, newEdge NewEdge) {
	a := StartEdge(t, newEdge, EdgeA, FastOptions())
	ctx := context.Background()
	if err := a.Register(ctx, Conn("agent-1", "", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}
	if _, err := a.Lookup(ctx, "agent-1"); err != nil {
		t.Fatalf("lookup: %v", err)
	}
	if !a.Healthy() {
		t.Errorf("healthy: got false, want true")
	}
	checks := []struct {
		name, op string
		want     float64
	}{
		{"edge_registry_healthy", "", 1},
		{"edge_registry_operations_total", "register", 1},
		{"edge_registry_operations_total", "lookup", 1},
		{"edge_registry_errors_total", "register", 0},
		{"edge_registry_errors_total", "lookup", 0},
	}
	for _, c := range checks {
		if got := a.Metric(t, c.name, c.op); got != c.want {
			t.Errorf("%s{op=%q}: got %v, want %v", c.name, c.op, got, c.want)
		}
	}
}

// sameConns compares connection lists in any order, times by instant.
func sameConns(got, want []registry.ConnInfo) bool {
	if len(got) != len(want) {
		return false
	}
	norm := func(cs []registry.ConnInfo) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s", c.AgentID, c.ProjectID, c.ConnectionID, c.Version,
				c.Commit, c.PodNamespace, c.PodName, c.ConnectedAt.UTC().Format(time.RFC3339Nano), c.Edge)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(got), norm(want))
}

func agentIDs(cs []registry.ConnInfo) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.AgentID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func describe(cs []registry.ConnInfo) string {
	if len(cs) == 0 {
		return "[]"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.AgentID + "/" + c.ConnectionID + "@" + c.Edge
	}
	return "[" + strings.Join(parts, " ") + "]"
}
