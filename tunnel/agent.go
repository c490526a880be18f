package tunnel

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

// AgentOptions configure the agent side. EdgeURL, Token and Upstreams are required.
type AgentOptions struct {
	// EdgeURL is the edge's base URL (http or https); the agent appends ConnectPath.
	EdgeURL string
	// Token gives the agent token; it is called at each connect, so a rotated file is picked up.
	Token func(ctx context.Context) (string, error)
	// Info is what the agent says about itself (version, commit, POD_NAMESPACE, POD_NAME).
	Info AgentInfo
	// Upstreams maps each allowed port to its upstream address (host:port); see AllowPorts.
	// A request for any other port gets 403.
	Upstreams map[int]string
	// TLSConfig for an https EdgeURL (CA, or InsecureSkipVerify in development).
	TLSConfig *tls.Config
	// Connections is how many connections to keep up at once (default 1).
	Connections int
	// MaxConnectionAge, when set, replaces a connection after about that long: a new one is
	// connected first, then the old one drains (its requests in flight finish). This lets new edge
	// instances get agents after a scale-out.
	MaxConnectionAge time.Duration
	// DrainTimeout bounds how long a drained connection may take to finish its requests (default
	// 1 min), on handover and when Run stops; longer WebSockets are cut then.
	DrainTimeout time.Duration
	// HandshakeTimeout bounds one connect request (default 30 s).
	HandshakeTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed connects (default 1 s and 20 s).
	MinBackoff, MaxBackoff time.Duration
	StreamWindow           uint32        // default DefaultStreamWindow
	KeepAlive              time.Duration // default DefaultKeepAlive
	// WriteError answers what the agent refuses (a port it does not serve, an upstream it cannot
	// reach), and RemoveEdgeHeaders takes the edge's own headers off a request before its
	// upstream: the edge's one error writer and header rule. Both required.
	WriteError        ErrorWriter
	RemoveEdgeHeaders func(http.Header)
	// WrapTransport, when set, takes the transport to the upstreams and returns what carries
	// requests to them instead (edge passes its inline transport); nil uses it as it is.
	WrapTransport func(*http.Transport) RoundTripCloser
	// PerRequest keeps every request on the per-request path: the agent does not offer splice
	// streams (FeatureSplice), so it parses and proxies each request itself, through
	// WrapTransport. An agent with its own tracing needs that: its spans are made per request.
	PerRequest bool
	Logger     *slog.Logger
	Metrics    prometheus.Registerer // nil: metrics are not registered
	// Guard contains the panics of the agent's goroutines and of the requests it serves (nil:
	// contained, logged to standard error, not counted): a panic ends that stream or connection.
	Guard *guard.Guard
}

// AgentStatus is a snapshot of the agent's connections.
type AgentStatus struct {
	Connected   int       // connections taking requests
	LastError   error     // the last connect failure (a *StatusError when the edge refused), nil after a success
	LastErrorAt time.Time // when it happened
}

// Agent keeps connections to the edge and serves what arrives on them.
type Agent struct {
	opts       AgentOptions
	connectURL string
	log        *slog.Logger
	metrics    *agentMetrics
	yamux      *yamux.Config
	client     *http.Transport
	handler    *upstreamHandler

	mu        sync.Mutex
	connected int
	lastErr   error
	lastErrAt time.Time
}

// TokenFile reads the agent token from a file at each connect (surrounding whitespace trimmed).
func TokenFile(path string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("tunnel: read token: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("tunnel: token file %s is empty", path)
		}
		return t, nil
	}
}

// NewAgent checks the options and fills in defaults; Run starts it.
func NewAgent(opts AgentOptions) (*Agent, error) {
	u, err := url.Parse(opts.EdgeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tunnel: edge URL %q: want http(s)://host[/prefix]", opts.EdgeURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + ConnectPath
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	if opts.Token == nil {
		return nil, errors.New("tunnel: AgentOptions.Token is required")
	}
	if len(opts.Upstreams) == 0 {
		return nil, errors.New("tunnel: AgentOptions.Upstreams is empty: no port would be allowed")
	}
	if opts.WriteError == nil || opts.RemoveEdgeHeaders == nil {
		return nil, errors.New("tunnel: AgentOptions.WriteError and RemoveEdgeHeaders are required")
	}
	if !opts.PerRequest && !opts.Info.Has(FeatureSplice) {
		opts.Info.Features = append(slices.Clone(opts.Info.Features), FeatureSplice)
	}
	if _, err := opts.Info.header(); err != nil {
		return nil, err
	}
	if opts.Connections <= 0 {
		opts.Connections = 1
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = time.Minute
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 30 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(20*time.Second, opts.MinBackoff)
	}
	cfg, err := muxSettings{&opts.StreamWindow, &opts.KeepAlive, &opts.Logger}.configure()
	if err != nil {
		return nil, err
	}
	m, err := newAgentMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	// The upgrade needs HTTP/1.1 end to end: never negotiate HTTP/2.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	tlsConfig := opts.TLSConfig.Clone()
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.NextProtos = []string{"http/1.1"}
	return &Agent{
		opts:       opts,
		connectURL: u.String(),
		log:        opts.Logger,
		metrics:    m,
		yamux:      cfg,
		client: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			TLSClientConfig:   tlsConfig,
			Protocols:         protocols,
			DisableKeepAlives: true,
		},
		handler: newUpstreamHandler(opts, m),
	}, nil
}

// Status tells how the agent's connections are.
func (a *Agent) Status() AgentStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AgentStatus{Connected: a.connected, LastError: a.lastErr, LastErrorAt: a.lastErrAt}
}

// Run keeps the connections up until ctx ends, then drains them (each within DrainTimeout) and
// returns nil.
func (a *Agent) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range a.opts.Connections {
		wg.Go(func() { // guard: keep contains its own panics; a crashed one starts again
			for a.keep(ctx) && sleep(ctx, a.opts.MinBackoff) {
			}
		})
	}
	wg.Wait()
	return nil
}

// keep holds one connection up: it reconnects when the connection ends, and replaces it (new one
// first) when it is too old or the edge asks. A panic in it drains its connection as a stop
// does, and keep reports it (crashed) for Run to start it again.
func (a *Agent) keep(ctx context.Context) (crashed bool) {
	var (
		cur     *agentConn
		wantNew bool
		age     <-chan time.Time
		retired sync.WaitGroup
		bo      = backoff{min: a.opts.MinBackoff, max: a.opts.MaxBackoff}
	)
	defer retired.Wait()
	defer a.opts.Guard.Recover("tunnel_agent", func(bool) {
		crashed = true
		a.retire(cur, &retired)
	})
	for {
		if cur != nil && wantNew && cur.session.IsClosed() {
			a.retire(cur, &retired) // ended while its replacement was being connected
			cur = nil
		}
		if cur == nil || wantNew {
			next, err := a.connect(ctx)
			if err != nil {
				if ctx.Err() != nil {
					a.retire(cur, &retired)
					return
				}
				a.connectFailed(err)
				if !sleep(ctx, bo.wait(err)) {
					a.retire(cur, &retired)
					return
				}
				continue
			}
			if cur != nil {
				bo.reset() // a replacement: the edge is fine
			}
			a.retire(cur, &retired)
			cur, wantNew, age = next, false, a.ageTimer()
		}
		select {
		case <-ctx.Done():
			a.retire(cur, &retired)
			return
		case <-cur.session.CloseChan():
			a.log.Info("connection to edge ended", "connection_id", cur.id, "lived", time.Since(cur.started).Round(time.Millisecond))
			// A connection that lived long was a blip: connect again at once. A short one may be
			// an edge that accepts and drops: back off, longer each time.
			short := time.Since(cur.started) < a.opts.MaxBackoff
			a.retire(cur, &retired)
			cur = nil
			if !short {
				bo.reset()
			} else if !sleep(ctx, bo.wait(nil)) {
				return
			}
		case <-cur.edgeDrain:
			a.log.Info("edge asks to reconnect", "connection_id", cur.id)
			wantNew = true
		case <-age:
			a.log.Info("connection reached its maximum age, replacing it", "connection_id", cur.id)
			wantNew = true
		}
	}
}

func (a *Agent) ageTimer() <-chan time.Time {
	if a.opts.MaxConnectionAge <= 0 {
		return nil
	}
	// Up to a tenth less, so that agents started together do not all reconnect together.
	d := a.opts.MaxConnectionAge
	return time.After(d - time.Duration(rand.Int64N(int64(d)/10+1)))
}

// retire drains c in the background (see agentConn.drain); nil does nothing.
func (a *Agent) retire(c *agentConn, wg *sync.WaitGroup) {
	if c == nil {
		return
	}
	a.setConnected(-1)
	wg.Go(func() {
		defer a.opts.Guard.Recover("tunnel_control", func(bool) { c.session.Close() })
		c.drain(a.opts.DrainTimeout)
	})
}

func (a *Agent) connectFailed(err error) {
	result := "error"
	if errors.Is(err, ErrUnauthorized) {
		result = "unauthorized"
		why := err.Error()
		var se *StatusError
		if errors.As(err, &se) {
			why = fmt.Sprintf("%s (%d)", cmp.Or(se.Message, http.StatusText(se.StatusCode)), se.StatusCode)
		}
		a.log.Error("edge refused the agent token: "+why+"; check the token", "url", a.connectURL)
	} else {
		a.log.Warn("connect to edge failed", "url", a.connectURL, "error", err)
	}
	a.metrics.connects.WithLabelValues(result).Inc()
	a.mu.Lock()
	a.lastErr, a.lastErrAt = err, time.Now()
	a.mu.Unlock()
}

func (a *Agent) setConnected(delta int) {
	a.metrics.connections.Add(float64(delta))
	a.mu.Lock()
	a.connected += delta
	if delta > 0 {
		a.lastErr = nil
	}
	a.mu.Unlock()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
