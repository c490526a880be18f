package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"gitlab.com/edge/edge/internal/guard"
)

// ClassifyType names the kind of routing value sent to the classify service.
type ClassifyType string

// The routing values a routable token carries, in the order tokens.md asks for them: p > g > o > u.
const (
	ClassifyProject      ClassifyType = "PROJECT_ID"
	ClassifyGroup        ClassifyType = "GROUP_ID"
	ClassifyOrganization ClassifyType = "ORGANIZATION_ID"
	ClassifyUser         ClassifyType = "USER_ID"
)

// Defaults for ClassifierOptions fields left zero.
const (
	DefaultClassifyTimeout   = 2 * time.Second
	DefaultClassifyCacheSize = 10_000
)

// kind is the compact form used in cache keys; ok is false for a type the service does not know.
func (t ClassifyType) kind() (uint8, bool) {
	switch t {
	case ClassifyProject:
		return 1, true
	case ClassifyGroup:
		return 2, true
	case ClassifyOrganization:
		return 3, true
	case ClassifyUser:
		return 4, true
	}
	return 0, false
}

// ClassifierOptions configures NewClassifier; zero fields take the defaults noted.
type ClassifierOptions struct {
	URL       string        // base URL; requests go to URL + "/v1/classify"
	Client    *http.Client  // nil = a client with sane transport timeouts
	Timeout   time.Duration // per classify call, default 2s
	CacheSize int           // default 10000 entries
	Log       *slog.Logger
	Now       func() time.Time
	// Guard contains a classify call's panics (singleflight runs it on a goroutine of its own):
	// the call fails with ErrClassify. nil: contained, logged to standard error, not counted.
	Guard *guard.Guard
}

// Classifier asks a Topology-Service-style classify endpoint which cell owns a routing value.
// Safe for concurrent use.
type Classifier struct {
	endpoint string
	client   *http.Client
	timeout  time.Duration
	cache    *classifyCache
	flights  singleflight.Group
	guard    *guard.Guard
	log      *slog.Logger
	now      func() time.Time
}

// NewClassifier checks the options (errors wrap ErrBadClassifierOptions) and fills in defaults.
// It makes no network call.
func NewClassifier(o ClassifierOptions) (*Classifier, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: URL: %w", ErrBadClassifierOptions, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: URL %q is not http(s)://host", ErrBadClassifierOptions, u.Redacted())
	}
	if o.Timeout < 0 || o.CacheSize < 0 {
		return nil, fmt.Errorf("%w: negative timeout or cache size", ErrBadClassifierOptions)
	}
	c := &Classifier{
		endpoint: strings.TrimSuffix(o.URL, "/") + "/v1/classify",
		client:   o.Client,
		timeout:  o.Timeout,
		log:      o.Log,
		now:      o.Now,
		guard:    o.Guard,
	}
	if c.client == nil {
		c.client = defaultClassifyClient()
	}
	if c.timeout == 0 {
		c.timeout = DefaultClassifyTimeout
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	size := o.CacheSize
	if size == 0 {
		size = DefaultClassifyCacheSize
	}
	if c.cache, err = newClassifyCache(size); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadClassifierOptions, err)
	}
	return c, nil
}

// The per-call timeout comes from the context; these bound the stages a context cannot see
// separately, and keep enough idle connections for a busy edge talking to one service.
func defaultClassifyClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   2 * time.Second,
		ResponseHeaderTimeout: 5 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   64,
	}}
}

// Forget drops the cached answers naming an address names matches (a cell an organization moved
// away from), and any cached answer about the organization org itself (0: none); it returns how
// many it dropped. The next lookup of each asks the service again.
func (c *Classifier) Forget(names func(address string) bool, org uint64) int {
	var keys []classifyKey
	if kind, ok := ClassifyOrganization.kind(); ok && org != 0 {
		keys = append(keys, classifyKey{kind: kind, value: org})
	}
	return c.cache.forget(names, keys)
}

// Classify returns the proxy address the service answered. found=false for a negative answer
// ({"action":"reject"} or 404 or any other non-proxy action). err != nil (wrapping ErrClassify) for
// transport errors, timeouts, other statuses, malformed JSON; callers treat errors as "no answer".
//
// Answers are cached by (type, value) for the Cache-Control max-age they carry; errors are not.
// Concurrent identical lookups share one upstream call, which runs on a context detached from any
// one caller's cancellation (so one client hanging up does not fail the others) but bounded by
// the classifier's timeout.
func (c *Classifier) Classify(ctx context.Context, typ ClassifyType, value uint64) (address string, found bool, err error) {
	kind, ok := typ.kind()
	if !ok {
		return "", false, fmt.Errorf("%w: unknown type %q", ErrClassify, typ)
	}
	key := classifyKey{kind: kind, value: value}
	if a, ok := c.cache.get(key, c.now()); ok {
		return a.address, a.found, nil
	}
	ch := c.flights.DoChan(string(typ)+":"+strconv.FormatUint(value, 10), func() (any, error) {
		return c.guard.Call("classify", func() (any, error) { return c.fetch(ctx, key, typ, value) })
	})
	select {
	case r := <-ch:
		if errors.Is(r.Err, guard.ErrCrashed) {
			return "", false, fmt.Errorf("%w: %w", ErrClassify, r.Err)
		}
		if r.Err != nil {
			return "", false, r.Err
		}
		a := r.Val.(answer)
		return a.address, a.found, nil
	case <-ctx.Done():
		return "", false, fmt.Errorf("%w: %w", ErrClassify, ctx.Err())
	}
}

func (c *Classifier) fetch(ctx context.Context, key classifyKey, typ ClassifyType, value uint64) (answer, error) {
	// A caller that missed the cache just as the previous flight filled it must not ask again.
	if a, ok := c.cache.get(key, c.now()); ok {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	a, ttl, err := c.ask(ctx, typ, value)
	if err != nil {
		c.log.Warn("classify failed", "type", string(typ), "value", value, "error", err)
		return answer{}, err
	}
	c.log.Debug("classify answered", "type", string(typ), "value", value,
		"found", a.found, "address", a.address, "ttl", ttl)
	if ttl > 0 {
		c.cache.add(key, a, c.now().Add(ttl))
	}
	return a, nil
}
