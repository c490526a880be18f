package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/redistest"
	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/registry/registrytest"
)

func redisBackend(srv *redistest.Server, newClient func(addr string) redis.UniversalClient) func(t *testing.T) registrytest.NewEdge {
	return func(t *testing.T) registrytest.NewEdge {
		// The case's name keeps the cases sharing one redis-server apart.
		prefix := t.Name()
		return func(t *testing.T, _ string, opts registry.Options) registry.Registry {
			client := newClient(srv.Addr)
			t.Cleanup(func() { _ = client.Close() })
			r, err := registry.NewRedis(client, registry.RedisOptions{Options: opts, KeyPrefix: prefix}, testLogger(t))
			if err != nil {
				t.Fatalf("new redis registry: %v", err)
			}
			return r
		}
	}
}

func standalone(addr string) redis.UniversalClient {
	return redis.NewClient(&redis.Options{Addr: addr})
}

// A one-shard Ring takes the per-key transaction path a Cluster takes.
func oneShardRing(addr string) redis.UniversalClient {
	return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"shard": addr}})
}

func TestRedisRegistryContract(t *testing.T) {
	srv := redistest.Start(t)
	registrytest.Run(t, redisBackend(srv, standalone))
}

func TestRedisRegistryContractPerKeyTransactions(t *testing.T) {
	srv := redistest.Start(t)
	registrytest.Run(t, redisBackend(srv, oneShardRing))
}

func TestRedisRegistryContractCluster(t *testing.T) {
	srv := redistest.StartCluster(t)
	registrytest.Run(t, redisBackend(srv, func(addr string) redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	}))
}

func TestRedisLayout(t *testing.T) {
	srv := redistest.Start(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := raw.Subscribe(ctx, "lay:v1:agent_events")
	defer events.Close()
	if _, err := events.Receive(ctx); err != nil {
		t.Fatalf("subscribe: %v", err)
	}

	opts := registrytest.FastOptions()
	opts.TTL, opts.Refresh = time.Minute, 30*time.Second
	newEdge := func(t *testing.T, _ string, o registry.Options) registry.Registry {
		r, err := registry.NewRedis(raw, registry.RedisOptions{Options: o, KeyPrefix: "lay"}, testLogger(t))
		if err != nil {
			t.Fatalf("new redis registry: %v", err)
		}
		return r
	}
	a := registrytest.StartEdge(t, newEdge, registrytest.EdgeA, opts)
	c := registrytest.Conn("agent-1", "proj-1", "conn-1")
	before := time.Now()
	if err := a.Register(ctx, c); err != nil {
		t.Fatalf("register: %v", err)
	}

	fields, err := raw.HGetAll(ctx, "lay:v1:agent:agent-1").Result()
	if err != nil {
		t.Fatalf("hgetall: %v", err)
	}
	if len(fields) != 1 {
		t.Fatalf("agent hash fields: got %v, want one, %s", fields, registrytest.EdgeA)
	}
	var entry struct {
		ExpiresAt   *int64            `json:"expires_at"`
		Connections []json.RawMessage `json:"connections"`
	}
	if err := json.Unmarshal([]byte(fields[registrytest.EdgeA]), &entry); err != nil {
		t.Fatalf("entry %q: %v", fields[registrytest.EdgeA], err)
	}
	if entry.ExpiresAt == nil || *entry.ExpiresAt < before.Add(opts.TTL).Unix() || *entry.ExpiresAt > time.Now().Add(opts.TTL).Unix()+1 {
		t.Errorf("expires_at: got %v, want about now + ttl in unix seconds", entry.ExpiresAt)
	}
	var conn registry.ConnInfo
	if len(entry.Connections) != 1 || json.Unmarshal(entry.Connections[0], &conn) != nil || conn.ConnectionID != "conn-1" || conn.Edge != registrytest.EdgeA {
		t.Errorf("connections: got %s, want conn-1 on %s", entry.Connections, registrytest.EdgeA)
	}
	if ttl, err := raw.PTTL(ctx, "lay:v1:agent:agent-1").Result(); err != nil || ttl <= 0 || ttl > opts.TTL {
		t.Errorf("agent key ttl: got %v, %v, want within (0, %v]", ttl, err, opts.TTL)
	}

	hint, err := raw.HGet(ctx, "lay:v1:project:proj-1", "agent-1").Result()
	var pe struct {
		ExpiresAt int64 `json:"expires_at"`
	}
	if err != nil || json.Unmarshal([]byte(hint), &pe) != nil || pe.ExpiresAt < before.Add(opts.TTL).Unix() {
		t.Errorf("project index entry: got %q, %v, want {\"expires_at\": now + ttl}", hint, err)
	}
	if ttl, err := raw.PTTL(ctx, "lay:v1:project:proj-1").Result(); err != nil || ttl <= 0 || ttl > opts.TTL {
		t.Errorf("project key ttl: got %v, %v, want within (0, %v]", ttl, err, opts.TTL)
	}

	msg, err := events.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "agent-1" {
		t.Errorf("connect event: got %v, %v, want agent-1", msg, err)
	}
}

// Entries whose expires_at passed are ignored and deleted by readers, even while another edge
// keeps the key alive; unreadable ones are ignored.
func TestRedisExpiredEntriesIgnoredAndCleaned(t *testing.T) {
	srv := redistest.Start(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	newEdge := func(t *testing.T, _ string, o registry.Options) registry.Registry {
		r, err := registry.NewRedis(raw, registry.RedisOptions{Options: o, KeyPrefix: "exp"}, testLogger(t))
		if err != nil {
			t.Fatalf("new redis registry: %v", err)
		}
		return r
	}
	a := registrytest.StartEdge(t, newEdge, registrytest.EdgeA, registrytest.FastOptions())
	b := registrytest.StartEdge(t, newEdge, registrytest.EdgeB, registrytest.FastOptions())
	if err := a.Register(ctx, registrytest.Conn("agent-1", "proj-1", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}
	dead := fmt.Sprintf(`{"expires_at": %d, "connections": [{"agent_id": "agent-1", "connection_id": "dead"}]}`, time.Now().Add(-time.Minute).Unix())
	if err := raw.HSet(ctx, "exp:v1:agent:agent-1", "http://dead.internal:8081", dead, "http://garbled.internal:8081", "{").Err(); err != nil {
		t.Fatalf("hset: %v", err)
	}
	if err := raw.HSet(ctx, "exp:v1:project:proj-1", "agent-gone", fmt.Sprintf(`{"expires_at": %d}`, time.Now().Add(-time.Minute).Unix())).Err(); err != nil {
		t.Fatalf("hset: %v", err)
	}
	got, err := b.Lookup(ctx, "agent-1")
	if err != nil || len(got) != 1 || got[0].ConnectionID != "conn-1" {
		t.Errorf("lookup: got %+v, %v, want only conn-1", got, err)
	}
	if ok, err := raw.HExists(ctx, "exp:v1:agent:agent-1", "http://dead.internal:8081").Result(); err != nil || ok {
		t.Errorf("expired entry still stored after a read: %v, %v", ok, err)
	}
	if ok, err := raw.HExists(ctx, "exp:v1:agent:agent-1", registrytest.EdgeA).Result(); err != nil || !ok {
		t.Errorf("live entry gone after a read: %v, %v", ok, err)
	}
	byProject, err := b.ByProject(ctx, "proj-1")
	if err != nil || len(byProject) != 1 {
		t.Errorf("by project: got %+v, %v, want conn-1", byProject, err)
	}
	if ok, err := raw.HExists(ctx, "exp:v1:project:proj-1", "agent-gone").Result(); err != nil || ok {
		t.Errorf("expired project entry still stored after a read: %v, %v", ok, err)
	}
}

// After FLUSHALL every live connection is back within one refresh period.
func TestRedisFlushAll(t *testing.T) {
	srv := redistest.Start(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	newEdge := redisBackend(srv, standalone)(t)
	opts := registrytest.FastOptions()
	opts.TTL, opts.Refresh = 10*time.Second, 5*time.Second
	a := registrytest.StartEdge(t, newEdge, registrytest.EdgeA, opts)
	b := registrytest.StartEdge(t, newEdge, registrytest.EdgeB, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents := []string{"agent-1", "agent-2", "agent-3"}
	for i, id := range agents {
		if err := a.Register(ctx, registrytest.Conn(id, "proj-1", fmt.Sprintf("conn-%d", i))); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	if err := raw.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("flushall: %v", err)
	}
	flushed := time.Now()
	// The health probe notices the loss long before the refresh period (1s here, 4min by default).
	poll.UntilState(t, opts.Refresh, "every agent registered again after FLUSHALL", func() (bool, string) {
		missing := 0
		for _, id := range agents {
			if got, err := b.Lookup(ctx, id); err != nil || len(got) != 1 {
				missing++
			}
		}
		byProject, err := b.ByProject(ctx, "proj-1")
		return missing == 0 && err == nil && len(byProject) == len(agents),
			fmt.Sprintf("%d agents missing, by project %d, %v", missing, len(byProject), err)
	})
	t.Logf("registered again %v after FLUSHALL (refresh period %v)", time.Since(flushed), opts.Refresh)
}

// Redis down: lookups fail fast with ErrUnavailable, local truth stays, and everything is
// back once Redis is, without restarting anything.
func TestRedisDownAndBack(t *testing.T) {
	srv := redistest.Start(t)
	newEdge := redisBackend(srv, standalone)(t)
	opts := registrytest.FastOptions()
	opts.Timeout = 300 * time.Millisecond
	a := registrytest.StartEdge(t, newEdge, registrytest.EdgeA, opts)
	b := registrytest.StartEdge(t, newEdge, registrytest.EdgeB, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Register(ctx, registrytest.Conn("agent-1", "proj-1", "conn-1")); err != nil {
		t.Fatalf("register: %v", err)
	}

	srv.Stop()
	// Fast: the lookup gives up by the registry's own timeout, not the caller's deadline (a
	// generous one, the only time bound).
	lookupCtx, lookupCancel := context.WithTimeout(ctx, 30*time.Second)
	got, err := b.Lookup(lookupCtx, "agent-1")
	if lookupCtx.Err() != nil {
		t.Errorf("lookup with redis down ran into the caller's deadline, want it to give up after the registry's %v timeout", opts.Timeout)
	}
	lookupCancel()
	if !errors.Is(err, registry.ErrUnavailable) || len(got) != 0 {
		t.Errorf("lookup with redis down: got %+v, %v, want nothing and ErrUnavailable", got, err)
	}
	if err := a.Register(ctx, registrytest.Conn("agent-2", "", "conn-2")); !errors.Is(err, registry.ErrUnavailable) {
		t.Errorf("register with redis down: got %v, want ErrUnavailable", err)
	}
	got, err = a.Lookup(ctx, "agent-2")
	if !errors.Is(err, registry.ErrUnavailable) || len(got) != 1 {
		t.Errorf("holder's lookup with redis down: got %+v, %v, want its own connection and ErrUnavailable", got, err)
	}
	// The holder's wait returns its own connection at once (a generous deadline, the only time
	// bound); the other edge's runs into its deadline and says the registry is unavailable.
	for _, tt := range []struct {
		e         *registrytest.Edge
		wantConns int
		deadline  time.Duration
	}{{a, 1, 30 * time.Second}, {b, 0, 2 * opts.Timeout}} {
		waitCtx, waitCancel := context.WithTimeout(ctx, tt.deadline)
		got, err := tt.e.Wait(waitCtx, "agent-2")
		waitCancel()
		switch {
		case tt.wantConns > 0 && (err != nil || len(got) != tt.wantConns):
			t.Errorf("holder's wait with redis down: got %+v, %v, want its own connection", got, err)
		case tt.wantConns == 0 && (!errors.Is(err, registry.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded)):
			t.Errorf("wait with redis down: got %v, want ErrUnavailable and DeadlineExceeded", err)
		}
	}
	poll.UntilState(t, 5*time.Second, "both edges unhealthy", func() (bool, string) {
		return !a.Healthy() && !b.Healthy() && a.Metric(t, "edge_registry_healthy", "") == 0,
			fmt.Sprintf("healthy a %v b %v", a.Healthy(), b.Healthy())
	})

	srv.Start()
	restarted := time.Now()
	poll.UntilState(t, 10*time.Second, "everything registered again after redis came back", func() (bool, string) {
		one, err1 := b.Lookup(ctx, "agent-1")
		two, err2 := b.Lookup(ctx, "agent-2")
		return err1 == nil && err2 == nil && len(one) == 1 && len(two) == 1 && a.Healthy() && b.Healthy(),
			fmt.Sprintf("agent-1 %+v %v, agent-2 %+v %v, healthy a %v b %v", one, err1, two, err2, a.Healthy(), b.Healthy())
	})
	t.Logf("everything registered again %v after redis came back", time.Since(restarted))
	if got := a.Metric(t, "edge_registry_errors_total", "register"); got < 1 {
		t.Errorf("register errors: got %v, want at least 1", got)
	}
}
