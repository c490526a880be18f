package workspaceauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// Forwarder sends an allowed request to the port of the workspace through the agent that
// serves it.
type Forwarder func(w http.ResponseWriter, r *http.Request, agentID string, port int)

// Options configure Auth. Every field but Directory, HTTPClient, Metrics and Log is required.
type Options struct {
	Domain       string // workspace hosts are <port>-<name>.<Domain>
	Insecure     bool   // plain-HTTP development mode: no __Host- prefix, no Secure
	Issuer       string // the OpenID provider, found by discovery
	ClientID     string
	ClientSecret string
	RedirectURL  string // the one redirect URI; its host is the auth host
	Scopes       []string
	SessionKey   []byte // signs and encrypts cookies; at least 32 bytes
	SessionTTL   time.Duration
	Recheck      time.Duration // authorization is asked again at least this often
	Authorizer   Authorizer
	// Cache is the decision cache in front of Authorizer; nil: New makes one. Its expiry
	// goroutine lives as long as the process, so a caller that makes a new Auth on every config
	// reload passes the one it keeps.
	Cache      *Cache
	Directory  Directory // nil: whether a workspace exists is known only after login
	Store      Store
	Forward    Forwarder
	HTTPClient *http.Client // discovery and token exchange; nil: a client with timeouts
	Metrics    *Metrics
	Log        *slog.Logger
	// Guard contains the panics of the WebSockets' rechecks (nil: contained, logged to standard
	// error, not counted): a panic closes that WebSocket.
	Guard *guard.Guard
}

// Auth serves the auth host and the workspace hosts of one domain.
type Auth struct {
	o        Options
	authHost string
	// authOrigin is the auth host's Origin as a browser sends it: without the scheme's default port.
	authOrigin string
	cookies    *codec
	authz      *Cache
	provider   *provider
	logouts    *logoutCache
	log        *slog.Logger
	metrics    *Metrics
	busyLog    *logLimiter
}

// New checks the options. The provider is discovered at the first login, so edge starts while
// the provider is down.
func New(o Options) (*Auth, error) {
	switch {
	case o.Domain == "":
		return nil, errors.New("workspaceauth: Domain is required")
	case o.Authorizer == nil || o.Store == nil || o.Forward == nil:
		return nil, errors.New("workspaceauth: Authorizer, Store and Forward are required")
	case len(o.SessionKey) < 32:
		return nil, errors.New("workspaceauth: SessionKey must be at least 32 bytes")
	case o.SessionTTL <= 0 || o.Recheck <= 0:
		return nil, errors.New("workspaceauth: SessionTTL and Recheck must be positive")
	}
	ru, err := url.Parse(o.RedirectURL)
	if err != nil || ru.Host == "" || (ru.Scheme != "https" && !(o.Insecure && ru.Scheme == "http")) {
		return nil, fmt.Errorf("workspaceauth: RedirectURL %q: want https://<auth host>/oauth/callback", o.RedirectURL)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		if o.Metrics, err = NewMetrics(nil); err != nil {
			return nil, err
		}
	}
	if o.Cache == nil {
		o.Cache = NewCache(o.Authorizer, o.Recheck, 100_000, o.Metrics).UseGuard(o.Guard)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	a := &Auth{
		o:        o,
		authHost: ru.Host,
		cookies:  newCodec(o.SessionKey, o.SessionTTL, !o.Insecure),
		authz:    o.Cache,
		provider: &provider{o: o},
		logouts:  &logoutCache{ttl: o.Recheck, entries: map[string]logoutEntry{}},
		log:      o.Log,
		metrics:  o.Metrics,
		busyLog:  &logLimiter{every: 10 * time.Second},
	}
	a.authOrigin = ru.Scheme + "://" + ru.Host
	if ru.Port() == map[string]string{"https": "443", "http": "80"}[ru.Scheme] {
		a.authOrigin = ru.Scheme + "://" + strings.TrimSuffix(ru.Host, ":"+ru.Port())
	}
	if o.Insecure {
		o.Log.Warn("workspaces: insecure_http is on: session cookies without Secure or __Host-, plain-HTTP URLs; for development only")
	}
	return a, nil
}

// AuthHost is the host name (and port) of the redirect URI.
func (a *Auth) AuthHost() string { return a.authHost }

func (a *Auth) scheme() string {
	if a.o.Insecure {
		return "http"
	}
	return "https"
}

// randomToken is 32 random bytes, base64url: states, tickets, transfer tokens, bindings.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Explain tells, without a user, what a workspace URL's host names: the workspace, the port and
// (with a directory such as the static file) the agent.
func (a *Auth) Explain(host string) (h Host, agentID string, ok bool) {
	h, ok = ParseHost(host, a.o.Domain)
	if ok && a.o.Directory != nil {
		agentID, ok = a.o.Directory.Lookup(h.Workspace)
	}
	return h, agentID, ok
}

// loggedOutAt is when the user last logged out (ns since the epoch), or 0; read through a cache
// that expires with the recheck interval, so a logout reaches every instance within it.
func (a *Auth) loggedOutAt(ctx context.Context, userID string) (int64, error) {
	if t, ok := a.logouts.get(userID); ok {
		return t, nil
	}
	var t int64
	v, err := a.o.Store.Get(ctx, "logout:"+userID)
	switch {
	case errors.Is(err, ErrSpent):
	case err != nil:
		return 0, err
	default:
		fmt.Sscan(string(v), &t)
	}
	a.logouts.add(userID, t)
	return t, nil
}

// logoutCache keeps what the store said of users' logouts for a while: no goroutine of its own,
// so an Auth made on every reload leaves nothing running.
type logoutCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]logoutEntry
}

type logoutEntry struct {
	at    int64
	until time.Time
}

func (c *logoutCache) get(userID string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[userID]
	if !ok || time.Now().After(e.until) {
		return 0, false
	}
	return e.at, true
}

func (c *logoutCache) add(userID string, at int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= 100_000 {
		clear(c.entries)
	}
	c.entries[userID] = logoutEntry{at: at, until: time.Now().Add(c.ttl)}
}

func (c *logoutCache) remove(userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, userID)
}

// provider is the OpenID provider, discovered once it answers.
type provider struct {
	o    Options
	mu   sync.Mutex
	rely *relyingParty
}
