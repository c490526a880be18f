package workspaceauth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore is a Store shared by every edge instance on one Redis (the registry's). Each value
// is a key with its TTL; values put for a client are also members of two sorted sets scored by
// expiry, one per client and one for all, which the scripts below trim from the front: each
// operation costs O(log n) and Redis drops expired values by itself. Every key carries the
// same hash tag, so the scripts work on a Redis Cluster too.
type RedisStore struct {
	client redis.UniversalClient
	limits Limits
	prefix string // "<prefix>:v1:ws:{login}:"
}

// NewRedisStore keeps values under "<prefix>:v1:ws:{login}:".
func NewRedisStore(client redis.UniversalClient, prefix string, limits Limits) *RedisStore {
	return &RedisStore{client: client, limits: limits, prefix: prefix + ":v1:ws:{login}:"}
}

// putScript: KEYS value, all-set, client-set; ARGV stored value, ttl ms, now ms, per client,
// total, counted ("1" or "0"). Returns 1 stored, 0 key exists, -1 over a limit.
var putScript = redis.NewScript(`
local now, ttl = tonumber(ARGV[3]), tonumber(ARGV[2])
local counted = ARGV[6] == '1'
if counted then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[4]) or redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
    return -1
  end
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then
  return 0
end
if counted then
  redis.call('ZADD', KEYS[2], now + ttl, KEYS[1])
  redis.call('ZADD', KEYS[3], now + ttl, KEYS[1])
  for i = 2, 3 do
    if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
return 1
`)

// takeScript: KEYS value, all-set; ARGV the client-set prefix. The stored value is
// "<client>\n<value>": the client is where the value is counted.
var takeScript = redis.NewScript(`
local v = redis.call('GETDEL', KEYS[1])
if not v then return false end
local i = string.find(v, '\n', 1, true)
local client = string.sub(v, 1, i - 1)
if client ~= '' then
  redis.call('ZREM', KEYS[2], KEYS[1])
  redis.call('ZREM', ARGV[1] .. client, KEYS[1])
end
return string.sub(v, i + 1)
`)

func (s *RedisStore) Put(ctx context.Context, key, client string, value []byte, ttl time.Duration) error {
	counted := "0"
	if client != "" {
		counted = "1"
	}
	stored := append([]byte(client+"\n"), value...)
	now := time.Now().UnixMilli()
	n, err := putScript.Run(ctx, s.client, []string{s.prefix + key, s.prefix + "all", s.prefix + "client:" + client},
		stored, ttl.Milliseconds(), now, s.limits.PerClient, s.limits.Total, counted).Int()
	switch {
	case err != nil:
		return fmt.Errorf("workspaceauth: store: %w", err)
	case n == -1:
		return ErrBusy
	case n == 0:
		return fmt.Errorf("workspaceauth: key %q exists", key)
	}
	return nil
}

func (s *RedisStore) Take(ctx context.Context, key string) ([]byte, error) {
	v, err := redisValue(takeScript.Run(ctx, s.client, []string{s.prefix + key, s.prefix + "all"}, s.prefix+"client:").Text())
	if err != nil {
		return nil, err
	}
	return []byte(v), nil
}

func (s *RedisStore) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := redisValue(s.client.Get(ctx, s.prefix+key).Result())
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(v, "\n")
	if !ok {
		return nil, fmt.Errorf("workspaceauth: store: value %q has no client", key)
	}
	return []byte(rest), nil
}

func redisValue(v string, err error) (string, error) {
	switch {
	case errors.Is(err, redis.Nil):
		return "", ErrSpent
	case err != nil:
		return "", fmt.Errorf("workspaceauth: store: %w", err)
	}
	return v, nil
}
