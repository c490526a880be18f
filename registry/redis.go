package registry

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure NewRedis.
type RedisOptions struct {
	Options
	// KeyPrefix starts every key (registry.redis.key_prefix); "" means DefaultRedisKeyPrefix.
	KeyPrefix string
}

// Redis is the Registry shared by several edge instances through Redis (a standalone
// server, Sentinel or Cluster: anything redis.UniversalClient covers).
//
// Layout (v1; a format change takes a new version, so old values are never misread):
//
//	<prefix>:v1:agent:<agent_id>     hash: field <edge URL> = {"expires_at": <unix s>, "connections": [ConnInfo...]}
//	<prefix>:v1:project:<project_id> hash: field <agent_id> = {"expires_at": <unix s>}
//	<prefix>:v1:agent_events         pub/sub channel: message <agent_id> when it connects
//
// Each key carries a PEXPIRE of the TTL, set in the same MULTI as the HSET, and each field its
// own expires_at, so the entry of an edge that died expires even while other edges keep the key
// alive.
type Redis struct{ *registry }

// NewRedis makes a registry on client. The client belongs to the caller, who closes it
// after Run returned.
func NewRedis(client redis.UniversalClient, opts RedisOptions, log *slog.Logger) (*Redis, error) {
	ro := opts.Options.withDefaults()
	if err := ro.validate(); err != nil {
		return nil, err
	}
	if u, err := url.Parse(ro.Self); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%w: self %q is not an absolute URL", ErrBadOptions, ro.Self)
	}
	if client == nil {
		return nil, fmt.Errorf("%w: no redis client", ErrBadOptions)
	}
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultRedisKeyPrefix
	}
	if strings.ContainsAny(prefix, " \t\r\n") {
		return nil, fmt.Errorf("%w: key prefix %q contains white space", ErrBadOptions, prefix)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	_, single := client.(*redis.Client)
	st := &redisStore{
		client:     client,
		prefix:     prefix + ":v1:",
		ttl:        ro.TTL,
		now:        ro.Now,
		perKey:     !single,
		cleanGrace: ro.TTL - ro.Refresh,
		cas:        redis.NewScript(casScript),
		log:        log,
		guard:      ro.Guard,
	}
	r, err := newRegistry(st, ro, "redis", log)
	if err != nil {
		return nil, err
	}
	return &Redis{r}, nil
}
