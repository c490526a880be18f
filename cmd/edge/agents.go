package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/proxy"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/tunnel"
)

// agentParts are the tunnel server, the registry and what routes requests to agents.
type agentParts struct {
	tunnels  *tunnel.Server
	registry discovery.Registry
	redis    redis.UniversalClient
	router   *proxy.AgentRouter
	internal http.Handler // nil without an internal listener
	// verifier checks agent tokens at connect; a reload swaps it, nil refuses every agent.
	verifier atomic.Pointer[tokens.AgentVerifier]
	events   chan registryEvent
	stopRun  context.CancelFunc
	draining chan struct{}
	running  sync.WaitGroup
	log      *slog.Logger
}

type registryEvent struct {
	info      discovery.ConnInfo
	connected bool
}

func buildAgents(cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) (*agentParts, error) {
	a := &agentParts{events: make(chan registryEvent, 4096), draining: make(chan struct{}), log: log}
	opts := discovery.RegistryOptions{Self: cfg.Listen.AdvertiseInternal, Registerer: reg}
	if r := cfg.Registry; r != nil {
		opts.TTL, opts.Refresh = r.TTL.Duration, r.Refresh.Duration
		redis.SetLogger(redisLogger{log})
		a.redis = redis.NewUniversalClient(&redis.UniversalOptions{
			Addrs: r.Redis.Addresses(), MasterName: r.Redis.MasterName, Username: r.Redis.Username,
			Password: string(r.Redis.Password), DB: r.Redis.DB,
			DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		})
		rr, err := discovery.NewRedisRegistry(a.redis, discovery.RedisOptions{RegistryOptions: opts, KeyPrefix: r.Redis.KeyPrefix}, log)
		if err != nil {
			return nil, usageError{Err: fmt.Errorf("registry: %w", err)}
		}
		a.registry = rr
	} else {
		mr, err := discovery.NewMemoryRegistry(discovery.NewMemoryStore(), opts, log)
		if err != nil {
			return nil, err
		}
		a.registry = mr
	}
	var err error
	a.tunnels, err = tunnel.NewServer(tunnel.ServerOptions{
		Verify: func(ctx context.Context, token string) (tunnel.Identity, error) {
			v := a.verifier.Load()
			if v == nil {
				return tunnel.Identity{}, errors.New("agents.keys is not configured")
			}
			id, err := v.Verify(ctx, token)
			return tunnel.Identity{AgentID: id.AgentID, ProjectID: id.ProjectID}, err
		},
		OnConnect:    func(c *tunnel.Conn) { a.events <- registryEvent{connInfo(c), true} },
		OnDisconnect: func(c *tunnel.Conn) { a.events <- registryEvent{connInfo(c), false} },
		// With the default 1 MiB window, slow readers can make this edge buffer at most
		// 256 MiB per agent at this stream cap.
		MaxStreamsPerAgent: 256,
		// A connection counts only once its handshake is done (tunnel.DefaultHandshakeTimeout);
		// pending ones count toward the cap, so silent upgrades cannot pile up.
		MaxConnectionsPerAgent: cfg.Agents.MaxConnections,
		WriteError:             proxy.WriteError,
		WrapTransport:          inlineTransport,
		Logger:                 log,
		Metrics:                reg,
	})
	if err != nil {
		return nil, err
	}
	var minter proxy.InternalMinter
	var internalVerifier proxy.InternalVerifier
	if len(cfg.Internal.Secret) > 0 {
		signer, err := tokens.NewInternalSigner(cfg.Internal.Secret, 0)
		if err != nil {
			return nil, usageError{Err: fmt.Errorf("internal.secret_file: %w", err)}
		}
		v, err := tokens.NewInternalVerifier(cfg.Internal.Secret, 0, 0)
		if err != nil {
			return nil, usageError{Err: fmt.Errorf("internal.secret_file: %w", err)}
		}
		minter, internalVerifier = signer, v
	}
	var peerTLS *tls.Config
	if len(cfg.Internal.CA) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(cfg.Internal.CA)
		peerTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	router, err := proxy.NewAgentRouter(proxy.AgentRouterOptions{
		Self: cfg.Listen.AdvertiseInternal, Tunnels: localTunnels{a.tunnels}, Registry: a.registry, Minter: minter,
		PeerPrefixes: cfg.Internal.PeerPrefixes, PeerTLS: peerTLS,
		Wait: cfg.Agents.Wait.Duration, Draining: a.draining, Log: log, Registerer: reg,
	})
	if err != nil {
		return nil, err
	}
	a.router = router
	if internalVerifier != nil && cfg.Listen.Internal != "" {
		a.internal = router.InternalHandler(internalVerifier)
	}
	return a, nil
}

// agentVerifier checks agent tokens with the keys of one config.
func agentVerifier(c config.Agents) (*tokens.AgentVerifier, error) {
	keys, err := verificationKeys("agents.keys", c.Keys)
	if err != nil {
		return nil, err
	}
	v, err := tokens.NewAgentVerifier(tokens.AgentVerifierOptions{Keys: keys, Issuer: c.Issuer, Leeway: c.Leeway.Duration})
	if err != nil {
		return nil, fmt.Errorf("agents.keys: %w", err)
	}
	return v, nil
}

func connInfo(c *tunnel.Conn) discovery.ConnInfo {
	i := c.Info()
	return discovery.ConnInfo{
		AgentID: i.AgentID, ProjectID: i.ProjectID, ConnectionID: i.ConnectionID,
		Version: i.Version, Commit: i.Commit, PodNamespace: i.PodNamespace, PodName: i.PodName,
		ConnectedAt: i.ConnectedAt.UTC(),
	}
}

// run keeps the registry in step with the tunnels, in connect order, off the request path,
// until stopRegistry.
func (a *agentParts) run() {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopRun = cancel
	a.running.Go(func() {
		if err := a.registry.Run(ctx); err != nil {
			a.log.Error("registry stopped", "error", err)
		}
	})
	a.running.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-a.events:
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
		}
	})
}

// drainRegistry is the first step of a drain: other edges stop sending here, and requests
// waiting for an agent get 503.
func (a *agentParts) drainRegistry(ctx context.Context) {
	close(a.draining)
	if err := a.registry.Drain(ctx); err != nil {
		a.log.Warn("registry drain", "error", err)
	}
}

// drainTunnels asks agents to reconnect elsewhere once their requests in flight are done, then
// closes what is left.
func (a *agentParts) drainTunnels(ctx context.Context) {
	if err := a.tunnels.Drain(ctx); err != nil {
		a.log.Warn("tunnel drain", "error", err)
	}
	a.tunnels.Close()
}

// stopRegistry stops the registry's loops and then closes its Redis client.
func (a *agentParts) stopRegistry() {
	if a.stopRun != nil {
		a.stopRun()
	}
	a.running.Wait()
	if a.redis != nil {
		a.redis.Close()
	}
}

type localTunnels struct{ s *tunnel.Server }

func (l localTunnels) Transport(agentID string) http.RoundTripper {
	if !l.s.Connected(agentID) {
		return nil
	}
	return l.s.Transport(agentID)
}

func (l localTunnels) ConnTransport(agentID, connectionID string) http.RoundTripper {
	c := l.s.Conn(agentID, connectionID)
	if c == nil {
		return nil
	}
	return c.Transport()
}

// redisLogger sends go-redis's own messages (dial failures while Redis is down) to the structured
// log instead of standard error. go-redis keeps its logger in a package variable, so only the
// binary sets it.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "component", "go-redis")
}

// inlineTransport carries the tunnels' plain requests as edge carries its cells' (on the calling
// goroutine; the rest through the transport it wraps).
func inlineTransport(t *http.Transport) tunnel.RoundTripCloser { return proxy.NewInlineTransport(t) }
