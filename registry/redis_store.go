package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/internal/redissub"
)

// casScript replaces (ARGV[3]) or deletes (ARGV[3] == "") field ARGV[1] of hash KEYS[1] only if
// it still holds ARGV[2]. Cleaning an expired entry or forgetting a stale connection must not
// delete what its edge wrote a moment before, which a plain HGET then HDEL would.
const casScript = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
if ARGV[3] == '' then return redis.call('HDEL', KEYS[1], ARGV[1]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`

// perKeyConcurrency bounds the parallel single-key transactions of a Cluster write.
const perKeyConcurrency = 16

type redisStore struct {
	client redis.UniversalClient
	prefix string // "<key_prefix>:v1:"
	ttl    time.Duration
	now    func() time.Time
	// perKey: one transaction per key, because a Cluster (or Ring) cannot run a transaction
	// across keys in different slots. A single server gets one transaction for a whole write.
	perKey bool
	// cleanGrace: an entry is ignored from its expires_at on, but deleted only this much later,
	// so a reader whose clock runs ahead cannot delete the live entries of other edges.
	cleanGrace time.Duration
	cas        *redis.Script
	log        *slog.Logger
	guard      *guard.Guard
}

func (s *redisStore) agentKey(agentID string) string     { return s.prefix + "agent:" + agentID }
func (s *redisStore) projectKey(projectID string) string { return s.prefix + "project:" + projectID }
func (s *redisStore) events() string                     { return s.prefix + "agent_events" }

// keyWrite is one key's part of a write: HSET of fields (then PEXPIRE), or HDEL of one field.
type keyWrite struct {
	key   string
	set   []any
	unset string
}

func (w keyWrite) queue(ctx context.Context, p redis.Pipeliner, ttl time.Duration) {
	if w.unset != "" {
		p.HDel(ctx, w.key, w.unset)
		return
	}
	p.HSet(ctx, w.key, w.set...)
	p.PExpire(ctx, w.key, ttl)
}

func (s *redisStore) write(ctx context.Context, edge string, ups []agentUpdate, expiresAt time.Time, publish bool) error {
	exp := unixCeil(expiresAt)
	hint, err := json.Marshal(projectEntry{ExpiresAt: exp})
	if err != nil {
		return err
	}
	var writes []keyWrite
	var events []string
	projects := make(map[string][]any)
	for _, u := range ups {
		key := s.agentKey(u.agentID)
		if len(u.conns) == 0 {
			writes = append(writes, keyWrite{key: key, unset: edge})
			continue
		}
		v, err := json.Marshal(edgeEntry{ExpiresAt: exp, Connections: u.conns})
		if err != nil {
			return err
		}
		writes = append(writes, keyWrite{key: key, set: []any{edge, v}})
		for _, p := range u.projectIDs {
			projects[s.projectKey(p)] = append(projects[s.projectKey(p)], u.agentID, hint)
		}
		if publish {
			events = append(events, u.agentID)
		}
	}
	for key, set := range projects {
		writes = append(writes, keyWrite{key: key, set: set})
	}

	if !s.perKey {
		_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, w := range writes {
				w.queue(ctx, p, s.ttl)
			}
			for _, id := range events {
				p.Publish(ctx, s.events(), id)
			}
			return nil
		})
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(perKeyConcurrency)
	for _, w := range writes {
		g.Go(func() (err error) {
			defer s.guard.Recover("registry", func(bool) {
				err = fmt.Errorf("%w: a write crashed (a contained panic)", ErrUnavailable)
			})
			_, err = s.client.TxPipelined(gctx, func(p redis.Pipeliner) error {
				w.queue(gctx, p, s.ttl)
				return nil
			})
			return err
		})
	}
	if err := g.Wait(); err != nil || len(events) == 0 {
		return err
	}
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range events {
			p.Publish(ctx, s.events(), id)
		}
		return nil
	})
	return err
}

func (s *redisStore) agents(ctx context.Context, agentIDs []string) (map[string]map[string][]ConnInfo, error) {
	cmds := make([]*redis.MapStringStringCmd, len(agentIDs))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range agentIDs {
			cmds[i] = p.HGetAll(ctx, s.agentKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make(map[string]map[string][]ConnInfo, len(agentIDs))
	for i, id := range agentIDs {
		key := s.agentKey(id)
		for edge, raw := range cmds[i].Val() {
			var e edgeEntry
			if err := json.Unmarshal([]byte(raw), &e); err != nil {
				s.log.Warn("ignoring an unreadable registry entry", "key", key, "edge", edge, "error", err)
				continue
			}
			if expired(e.ExpiresAt, now) {
				if expired(e.ExpiresAt, now.Add(-s.cleanGrace)) {
					s.clean(ctx, key, edge, raw)
				}
				continue
			}
			if len(e.Connections) == 0 {
				continue
			}
			if out[id] == nil {
				out[id] = make(map[string][]ConnInfo)
			}
			out[id][edge] = e.Connections
		}
	}
	return out, nil
}

// agentIDs scans for agent keys, on every master of a Cluster.
func (s *redisStore) agentIDs(ctx context.Context, limit int) ([]string, error) {
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, s.prefix+"agent:*", 500).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				if len(out) < limit {
					out = append(out, strings.TrimPrefix(k, s.prefix+"agent:"))
				}
			}
			full := len(out) >= limit
			mu.Unlock()
			if cursor = next; cursor == 0 || full {
				return nil
			}
		}
	}
	var err error
	if cluster, ok := s.client.(*redis.ClusterClient); ok {
		err = cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, s.client)
	}
	return out, err
}

func (s *redisStore) project(ctx context.Context, projectID string) ([]string, error) {
	key := s.projectKey(projectID)
	fields, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	now := s.now()
	ids := make([]string, 0, len(fields))
	for agentID, raw := range fields {
		var e projectEntry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			s.log.Warn("ignoring an unreadable registry project entry", "key", key, "agent_id", agentID, "error", err)
			continue
		}
		if expired(e.ExpiresAt, now) {
			if expired(e.ExpiresAt, now.Add(-s.cleanGrace)) {
				s.clean(ctx, key, agentID, raw)
			}
			continue
		}
		ids = append(ids, agentID)
	}
	slices.Sort(ids)
	return ids, nil
}

// clean deletes an expired field unless it was rewritten since it was read. Failing is harmless:
// the next reader tries again, and the key expires anyway once nobody writes it.
func (s *redisStore) clean(ctx context.Context, key, field, raw string) {
	if err := s.cas.Run(ctx, s.client, []string{key}, field, raw, "").Err(); err != nil {
		s.log.Debug("cleaning an expired registry entry failed", "key", key, "field", field, "error", err)
	}
}

// forgetAttempts bounds the compare-and-swap retries of forget when the entry keeps changing.
const forgetAttempts = 3

func (s *redisStore) forget(ctx context.Context, stale ConnInfo) error {
	key := s.agentKey(stale.AgentID)
	for range forgetAttempts {
		raw, err := s.client.HGet(ctx, key, stale.Edge).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		var e edgeEntry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil
		}
		kept := slices.DeleteFunc(e.Connections, func(c ConnInfo) bool { return c.ConnectionID == stale.ConnectionID })
		if len(kept) == len(e.Connections) {
			return nil
		}
		next := ""
		if len(kept) > 0 {
			b, err := json.Marshal(edgeEntry{ExpiresAt: e.ExpiresAt, Connections: kept})
			if err != nil {
				return err
			}
			next = string(b)
		}
		n, err := s.cas.Run(ctx, s.client, []string{key}, stale.Edge, raw, next).Int()
		if err != nil || n == 1 {
			return err
		}
	}
	return nil
}

func (s *redisStore) probe(ctx context.Context, edge, agentID string) (bool, error) {
	if agentID == "" {
		return true, s.client.Ping(ctx).Err()
	}
	return s.client.HExists(ctx, s.agentKey(agentID), edge).Result()
}

func (s *redisStore) subscribe(ctx context.Context, onEvent func(string), onSubscribed func()) {
	redissub.Follow(ctx, s.client, s.events(), 1024, onEvent, onSubscribed)
}
