package registry

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

// Registry defaults (contract.md: registry.ttl and registry.refresh).
const (
	DefaultTTL             = 5 * time.Minute
	DefaultRefresh         = 4 * time.Minute
	DefaultUnregisterDelay = 3 * time.Second
	DefaultPollMin         = time.Second
	DefaultPollMax         = 10 * time.Second
	DefaultTimeout         = 2 * time.Second
	DefaultHealthInterval  = 5 * time.Second
	DefaultRedisKeyPrefix  = "edge"
)

// Options configure both registry implementations. Zero durations mean the defaults.
type Options struct {
	// Self is this edge's advertise_internal URL, the field its entries are stored under.
	// Required for Redis; the single-instance memory registry accepts "".
	Self string
	// TTL is how long an entry lives without a refresh; Refresh how often this edge rewrites its
	// entries. Refresh must be shorter than TTL.
	TTL, Refresh time.Duration
	// UnregisterDelay debounces Unregister. Negative: unregister at once.
	UnregisterDelay time.Duration
	// PollMin and PollMax bound the backoff of the safety-net poll of a wait loop.
	PollMin, PollMax time.Duration
	// Timeout bounds each store operation, so a lookup fails quickly when Redis is gone.
	Timeout time.Duration
	// HealthInterval is how often Run pings the store; the first good ping after a failure
	// rewrites every entry this edge holds.
	HealthInterval time.Duration
	// Registerer receives the registry's metrics; nil: not registered.
	Registerer prometheus.Registerer
	// Now is the clock for entry expiry; nil: time.Now.
	Now func() time.Time
	// Guard contains the panics of the registry's goroutines and of Run's rounds (nil: contained,
	// logged to standard error, not counted): a panic fails that wait, write or round only.
	Guard *guard.Guard
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.TTL, DefaultTTL)
	def(&o.Refresh, DefaultRefresh)
	def(&o.UnregisterDelay, DefaultUnregisterDelay)
	def(&o.PollMin, DefaultPollMin)
	def(&o.PollMax, DefaultPollMax)
	def(&o.Timeout, DefaultTimeout)
	def(&o.HealthInterval, DefaultHealthInterval)
	if o.UnregisterDelay < 0 {
		o.UnregisterDelay = 0
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.TTL < 0 || o.Refresh < 0 || o.PollMin < 0 || o.PollMax < 0 || o.Timeout < 0 || o.HealthInterval < 0:
		return fmt.Errorf("%w: negative duration", ErrBadOptions)
	case o.Refresh >= o.TTL:
		return fmt.Errorf("%w: refresh %v must be shorter than ttl %v", ErrBadOptions, o.Refresh, o.TTL)
	case o.PollMin > o.PollMax:
		return fmt.Errorf("%w: poll min %v above poll max %v", ErrBadOptions, o.PollMin, o.PollMax)
	}
	return nil
}

const maxIDLen = 64

// validID is the agent and project id rule of tunnels.md: 1 to 64 of [A-Za-z0-9._-]. It also
// keeps ids from breaking the Redis key layout.
func validID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validConnInfo(c ConnInfo) error {
	switch {
	case !validID(c.AgentID):
		return fmt.Errorf("%w: agent id %q", ErrInvalidID, c.AgentID)
	case c.ProjectID != "" && !validID(c.ProjectID):
		return fmt.Errorf("%w: project id %q", ErrInvalidID, c.ProjectID)
	case c.ConnectionID == "" || len(c.ConnectionID) > 256:
		return fmt.Errorf("%w: connection id %q", ErrInvalidID, c.ConnectionID)
	}
	return nil
}
