package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/tunnel"
)

// registryEvent is a tunnel connecting or going, for the registry.
type registryEvent struct {
	info      registry.ConnInfo
	connected bool
}

// openRegistry makes the agent registry: in memory, or in Redis (registry) when several edges
// share the agents. Nothing connects before the registry stage starts.
func (a *agents) openRegistry(cfg *config.Config, d deps) error {
	log := d.log
	opts := registry.Options{Self: cfg.Listen.AdvertiseInternal, Registerer: d.reg, Guard: d.guard}
	if r := cfg.Registry; r != nil {
		opts.TTL, opts.Refresh = r.TTL.Duration, r.Refresh.Duration
		redis.SetLogger(redisLogger{log})
		a.redis = redisClient(r)
		rr, err := registry.NewRedis(a.redis, registry.RedisOptions{Options: opts, KeyPrefix: r.Redis.KeyPrefix}, log)
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("registry: %w", err)}
		}
		a.registry = rr
		a.moves = moves.NewTable(moves.NewRedis(a.redis, redisPrefix(r), log), log, a.moveChanged)
	} else {
		mr, err := registry.NewMemory(registry.NewMemoryStore(), opts, log)
		if err != nil {
			return err
		}
		a.registry = mr
		a.moves = moves.NewTable(moves.NewMemory(), log, a.moveChanged)
	}
	return nil
}

func connInfo(c *tunnel.Conn) registry.ConnInfo {
	i := c.Info()
	return registry.ConnInfo{
		AgentID: i.AgentID, ProjectID: i.ProjectID, ConnectionID: i.ConnectionID,
		Version: i.Version, Commit: i.Commit, PodNamespace: i.PodNamespace, PodName: i.PodName,
		ConnectedAt: i.ConnectedAt.UTC(),
		Splice:      i.Has(tunnel.FeatureSplice),
	}
}

// runRegistry keeps the registry in step with the tunnels, in connect order, off the request
// path, until the stage's lifetime ends.
func (a *agents) runRegistry(life context.Context, run *goroutines) error {
	run.Go("registry", func() {
		if err := a.registry.Run(life); err != nil {
			a.log.Error("registry stopped", "error", err)
		}
	})
	run.Go("organization moves", func() { a.moves.Run(life) })
	run.Go("registry", func() {
		for {
			select {
			case <-life.Done():
				return
			case ev := <-a.events:
				a.record(life, ev)
			}
		}
	})
	return nil
}

// record passes one tunnel event to the registry. A panic fails that event only: the loop goes
// on with the next (a connect is held locally before it is written, and the refresh loop writes
// it, as after a failed write).
func (a *agents) record(ctx context.Context, ev registryEvent) {
	defer a.guard.Recover("registry", nil)
	var err error
	if ev.connected {
		err = a.registry.Register(ctx, ev.info)
	} else {
		err = a.registry.Unregister(ctx, ev.info)
	}
	if err != nil {
		a.log.Warn("registry write failed; kept locally and retried by the refresh loop",
			"agent_id", ev.info.AgentID, "connected", ev.connected, "error", err)
	}
}

// drainRegistry is the first step of a drain: other edges stop sending here, and requests
// waiting for an agent get 503.
func (a *agents) drainRegistry(ctx context.Context) {
	close(a.draining)
	if err := a.registry.Drain(ctx); err != nil {
		a.log.Warn("registry drain", "error", err)
	}
}

// moveChanged logs each organization move as this edge learns of it.
func (a *agents) moveChanged(prev *moves.Move, m moves.Move) {
	from := "none"
	if prev != nil {
		from = prev.Phase.String()
	}
	a.log.Info("organization move in force", "org_id", m.Org, "cell", m.Cell, "from_cell", m.From,
		"phase", m.Phase.String(), "was", from)
}

// closeRedis closes the registry's Redis client, once the registry's loops have ended.
func (a *agents) closeRedis(context.Context) {
	if a.redis != nil {
		a.redis.Close()
	}
}

// redisLogger sends go-redis's own messages (dial failures while Redis is down) to the structured
// log instead of standard error. go-redis keeps its logger in a package variable, so only this
// package sets it.
type redisLogger struct{ log *slog.Logger }

// redisClient is the registry's Redis client.
func redisClient(r *config.Registry) redis.UniversalClient {
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: r.Redis.Addresses(), MasterName: r.Redis.MasterName, Username: r.Redis.Username,
		Password: string(r.Redis.Password), DB: r.Redis.DB,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
	})
}

func redisPrefix(r *config.Registry) string {
	if r.Redis.KeyPrefix == "" {
		return registry.DefaultRedisKeyPrefix
	}
	return r.Redis.KeyPrefix
}

// OpenOrgMoves opens the organization moves cfg's fleet shares, for edge org: they live in the
// registry's Redis. Without registry.redis each edge keeps its own in memory, and only its API
// for GitLab reaches them. close releases the Redis client.
func OpenOrgMoves(cfg *config.Config) (t *moves.Table, close func(), err error) {
	if cfg.Registry == nil {
		return nil, nil, cli.UsageError{Err: errors.New("registry is not set: each edge keeps its organization moves in memory; make them through its API for GitLab (PUT /-/api/v1/organizations/{id}/cell)")}
	}
	c := redisClient(cfg.Registry)
	return moves.NewTable(moves.NewRedis(c, redisPrefix(cfg.Registry), nil), nil, nil), func() { c.Close() }, nil
}

// KnownCells says whether cfg has a cell of that id: the cells a move may name.
func KnownCells(cfg *config.Config) func(uint64) bool { return knownCells(cfg.Cells) }
