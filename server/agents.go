package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"gitlab.com/edge/edge/agentrouter"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/tunnel"
	"gitlab.com/edge/edge/wire"
)

// agents are the agents' tunnels: the tunnel server, the registry that says which edge holds
// which agent (kept in step with the tunnels off the request path), the agent router that
// forwards to them, edge to edge when needed, and the API for GitLab.
type agents struct {
	tunnels  *tunnel.Server
	registry registry.Registry
	redis    redis.UniversalClient
	// moves are the organizations moved to another cell, kept where the registry keeps the
	// agents (its Redis, or this edge's memory) and mirrored here.
	moves    *moves.Table
	router   *agentrouter.AgentRouter
	internal http.Handler // nil without an internal listener
	// internalTLS is internal.tls, read once at start (nil: plain HTTP).
	internalTLS *tls.Config
	listener    *listener
	self        string // listen.advertise_internal: how the registry names this edge
	// verifier checks agent tokens at connect; a reload swaps it, nil refuses every agent.
	verifier atomic.Pointer[tokens.AgentVerifier]
	events   chan registryEvent
	draining chan struct{}
	log      *slog.Logger
	guard    *guard.Guard
}

func newAgents(cfg *config.Config, d deps) (*agents, error) {
	log, reg := d.log, d.reg
	a := &agents{events: make(chan registryEvent, 4096), draining: make(chan struct{}), log: log, self: cfg.Listen.AdvertiseInternal,
		guard: d.guard}
	if err := a.openRegistry(cfg, d); err != nil {
		return nil, err
	}
	if err := registerMoves(reg, a.moves); err != nil {
		return nil, err
	}
	var err error
	a.tunnels, err = tunnel.NewServer(tunnel.ServerOptions{
		Verify: func(ctx context.Context, token string) (tunnel.Identity, error) {
			v := a.verifier.Load()
			if v == nil {
				return tunnel.Identity{}, ErrNoAgentKeys
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
		WriteError:             hop.Write,
		RemoveEdgeHeaders:      hop.StripEdgeHeaders,
		WrapTransport:          InlineTransport,
		Logger:                 log,
		Metrics:                reg,
		Guard:                  d.guard,
	})
	if err != nil {
		return nil, err
	}
	var minter agentrouter.InternalMinter
	var internalVerifier agentrouter.InternalVerifier
	if len(cfg.Internal.Secret) > 0 {
		signer, err := tokens.NewInternalSigner(cfg.Internal.Secret, 0)
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("internal.secret_file: %w", err)}
		}
		v, err := tokens.NewInternalVerifier(cfg.Internal.Secret, 0, 0)
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("internal.secret_file: %w", err)}
		}
		minter, internalVerifier = signer, v
	}
	var peerTLS *tls.Config
	if len(cfg.Internal.CA) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(cfg.Internal.CA)
		peerTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	router, err := agentrouter.NewAgentRouter(agentrouter.AgentRouterOptions{
		Self: cfg.Listen.AdvertiseInternal, Tunnels: localTunnels{a.tunnels}, Registry: a.registry, Minter: minter,
		PeerPrefixes: cfg.Internal.PeerPrefixes, PeerTLS: peerTLS,
		Wait: cfg.Agents.Wait.Duration, Draining: a.draining, Log: log, Registerer: reg, Tracer: d.tracer, Guard: d.guard,
	})
	if err != nil {
		return nil, err
	}
	a.router = router
	a.listener = httpListener("listen.internal", "", phaseTraffic, d.front.InternalHandler(), limitedServer(cfg.Limits), log)
	if internalVerifier != nil && cfg.Listen.Internal != "" {
		a.internal = router.InternalHandler(internalVerifier)
		a.listener.addr = cfg.Listen.Internal
	}
	if t := cfg.Internal.TLS; t != nil && a.internal != nil {
		cert, err := tls.X509KeyPair(t.CertPEM, t.KeyPEM)
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("internal.tls: %w", err)}
		}
		a.internalTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
			NextProtos: []string{"h2", "http/1.1"}}
		a.listener.tls = func() *tls.Config { return a.internalTLS }
	}
	return a, nil
}

func (a *agents) module() module {
	return module{name: "agents",
		settings: []setting{
			{name: "listen.internal", same: func(x, y *config.Config) bool { return x.Listen.Internal == y.Listen.Internal }},
			{name: "listen.advertise_internal", same: func(x, y *config.Config) bool { return x.Listen.AdvertiseInternal == y.Listen.AdvertiseInternal }},
			{name: "registry", same: func(x, y *config.Config) bool { return config.SameRegistry(x.Registry, y.Registry) }},
			{name: "internal.secret_file", same: func(x, y *config.Config) bool { return bytes.Equal(x.Internal.Secret, y.Internal.Secret) }},
			{name: "internal.peers", same: func(x, y *config.Config) bool { return config.SamePeers(x.Internal, y.Internal) }},
			{name: "internal.tls", same: func(x, y *config.Config) bool { return config.SameInternalTLS(x.Internal, y.Internal) },
				files: func(c *config.Config) []string {
					if t := c.Internal.TLS; t != nil {
						return []string{t.CertFile, t.KeyFile}
					}
					return nil
				}},
			{name: "internal.ca_file", same: func(x, y *config.Config) bool { return bytes.Equal(x.Internal.CA, y.Internal.CA) }},
			// The agent router outlives reloads, and its wait with it.
			{name: "agents.wait", same: func(x, y *config.Config) bool { return x.Agents.Wait == y.Agents.Wait }},
			{name: "agents", reload: true, same: func(x, y *config.Config) bool { return config.SameAgents(x.Agents, y.Agents) }},
			{name: "gitlab_api", reload: true, same: func(x, y *config.Config) bool { return config.SameGitLabAPI(x.GitLabAPI, y.GitLabAPI) }},
		},
		routes:    a.routes,
		status:    a,
		listeners: []*listener{a.listener},
		stages: []stage{
			// Before the registry: its stop comes after the registry's loops have ended.
			{name: "redis", phase: phaseParts, stop: a.closeRedis},
			{name: "registry", phase: phaseParts, start: a.runRegistry},
			{name: "tunnels", phase: phaseParts, stop: a.drainTunnels},
			{name: "registry drain", phase: phaseReady, stop: a.drainRegistry},
		},
	}
}

// routes adds the agents' routes of one config: the agent connect (with agents.keys), the API
// for GitLab (with gitlab_api), and what the internal listener serves.
func (a *agents) routes(cfg *config.Config, next *table) error {
	if a.internal != nil {
		next.routes.Internal = &front.Route{Name: "internal", Upgrade: front.UpgradeInternal,
			Handler: a.internal, Rule: "served by the internal handler"}
	}
	connect := front.Route{Name: "agent_connect", Path: tunnel.ConnectPath, Upgrade: front.UpgradeTunnel,
		Rule: "agent token verified; the agent id comes from the token", Off: "this edge accepts no agents (agents.keys is not set)"}
	api := front.Route{Name: "gitlab_api", Prefix: agentrouter.GitLabAPIPrefix, Upgrade: front.UpgradeWebSocket,
		Explain: agentrouter.ExplainAPI, Off: "the API for GitLab is off (gitlab_api is not set)"}
	var v *tokens.AgentVerifier
	if len(cfg.Agents.Keys) > 0 {
		var err error
		if v, err = agentVerifier(cfg.Agents); err != nil {
			return cli.UsageError{Err: err}
		}
		connect.Handler = a.tunnels
	}
	if g := cfg.GitLabAPI; g != nil {
		gv, err := tokens.NewGitLabAPIVerifier(g.Secret, g.Issuer, g.Audience, 0)
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("gitlab_api: %w", err)}
		}
		api.Handler = agentrouter.NewGitLabAPI(a.router, gv, a.moves, knownCells(cfg.Cells))
	}
	next.routes.Add(connect, api)
	maxConns := cfg.Agents.MaxConnections
	next.onApply(func() {
		a.verifier.Store(v)
		a.tunnels.SetMaxConnectionsPerAgent(maxConns)
	})
	return nil
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

// drainTunnels asks agents to reconnect elsewhere once their requests in flight are done, then
// closes what is left.
func (a *agents) drainTunnels(ctx context.Context) {
	if err := a.tunnels.Drain(ctx); err != nil {
		a.log.Warn("tunnel drain", "error", err)
	}
	a.tunnels.Close()
	if err := a.router.WaitRelays(ctx); err != nil {
		a.log.Warn("splices still relaying at the end of the drain", "error", err)
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

func (l localTunnels) Splice(ctx context.Context, agentID, connectionID string, port int) (net.Conn, error) {
	return l.s.Splice(ctx, agentID, connectionID, port)
}

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "component", "go-redis")
}

// InlineTransport carries the tunnels' plain requests as edge carries its cells' (on the calling
// goroutine; the rest through the transport it wraps).
func InlineTransport(t *http.Transport) tunnel.RoundTripCloser { return wire.NewInlineTransport(t) }

// status shows the agents held here and across the fleet, the peer edges seen in the registry,
// and the internal listener's certificate.
func (a *agents) status(ctx context.Context, s *Status) {
	s.Moves = a.moves.All()
	for _, c := range a.tunnels.Conns() {
		i := c.Info()
		s.AgentsHere = append(s.AgentsHere, AgentStatus{AgentID: i.AgentID, ConnectionID: i.ConnectionID, Since: i.ConnectedAt.UTC(), Version: i.Version})
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	fleet, err := a.registry.List(ctx, fleetLimit)
	if err != nil {
		s.FleetError = err.Error()
	}
	peers := map[string]bool{}
	for _, c := range fleet {
		s.Fleet = append(s.Fleet, AgentStatus{AgentID: c.AgentID, ConnectionID: c.ConnectionID, Edge: c.Edge, Since: c.ConnectedAt.UTC(), Version: c.Version})
		if c.Edge != "" && c.Edge != a.self {
			peers[c.Edge] = true
		}
	}
	slices.SortFunc(s.Fleet, func(a, b AgentStatus) int { return strings.Compare(a.AgentID+a.ConnectionID, b.AgentID+b.ConnectionID) })
	for p := range peers {
		s.Peers = append(s.Peers, p)
	}
	slices.Sort(s.Peers)
	if t := a.internalTLS; t != nil {
		s.Certificates = appendCert(s.Certificates, "internal.tls", &t.Certificates[0], time.Now())
	}
}

// knownCells says whether a cell of cells has id: the cells a move may name.
func knownCells(cells []config.Cell) func(uint64) bool {
	return func(id uint64) bool {
		for _, c := range cells {
			if c.ID == id {
				return true
			}
		}
		return false
	}
}

// registerMoves exports edge_org_moves{phase}: the organization moves in force on this edge.
func registerMoves(reg prometheus.Registerer, t *moves.Table) error {
	for _, phase := range []moves.Phase{moves.Freeze, moves.Switched} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edge_org_moves", Help: "Organization moves in force on this edge, by phase.",
			ConstLabels: prometheus.Labels{"phase": phase.String()}}, func() float64 {
			n := 0
			for _, m := range t.All() {
				if m.Phase == phase {
					n++
				}
			}
			return float64(n)
		})
		if err := reg.Register(g); err != nil {
			return fmt.Errorf("edge_org_moves: %w", err)
		}
	}
	return nil
}
