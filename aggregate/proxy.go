package aggregate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// ClusterAnnotation marks every object edge hands out with the member it came from; it is removed
// again from bodies sent back to a member.
const ClusterAnnotation = "edge.k8s.io/cluster"

// Options configure a Proxy.
type Options struct {
	Prefix  string   // the path the API is served under, like /k8s
	Members []Member // in config order: the first that answers is the primary (discovery)
	// Authenticate checks the caller; edge then calls members as that user (impersonation).
	Authenticate func(ctx context.Context, r *http.Request) (User, error)
	// Partial answers a list with the members that answered (and a Warning header) when one is
	// down; otherwise the list fails with 503 naming it.
	Partial bool
	// Placement is the member a collection create goes to; empty: 405.
	Placement string
	Metrics   *Metrics
	Log       *slog.Logger
	// Guard contains the panics of the goroutines a request starts (nil: contained, logged to
	// standard error, not counted): a panic fails that member's part of the request.
	Guard *guard.Guard
	// EventWriteBound is how long one watch event may take to reach its client before the watch
	// is cut (0: eventWriteBound, 60 s).
	EventWriteBound time.Duration
}

// Proxy is the aggregated API.
type Proxy struct {
	o       Options
	members []*member // config order
	sorted  []*member // by name: the order of pages and of resourceVersions
	byName  map[string]*member
	log     *slog.Logger
	metrics *Metrics
	watches *Watches
}

// New checks the options; members are not contacted until a request needs them.
func New(o Options, watches *Watches) (*Proxy, error) {
	if o.Authenticate == nil || len(o.Members) == 0 {
		return nil, errors.New("aggregate: Authenticate and at least one member are required")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if watches == nil {
		watches = NewWatches()
	}
	p := &Proxy{o: o, byName: map[string]*member{}, log: o.Log, metrics: o.Metrics, watches: watches}
	for _, m := range o.Members {
		mm, err := newMember(m)
		if err != nil {
			return nil, err
		}
		if _, dup := p.byName[m.Name]; dup {
			return nil, fmt.Errorf("aggregate: member %s twice", m.Name)
		}
		p.members = append(p.members, mm)
		p.byName[m.Name] = mm
	}
	if o.Placement != "" && p.byName[o.Placement] == nil {
		return nil, fmt.Errorf("aggregate: placement names %s, which is not a member", o.Placement)
	}
	p.sorted = slices.Clone(p.members)
	slices.SortFunc(p.sorted, func(a, b *member) int { return strings.Compare(a.Name, b.Name) })
	return p, nil
}

// ServeHTTP serves a request whose path still has the prefix.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, p.o.Prefix)
	if path == "" {
		path = "/"
	}
	user, err := p.o.Authenticate(r.Context(), r)
	if err != nil {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	if _, ok := r.Header["Impersonate-User"]; ok {
		writeStatus(w, http.StatusForbidden, "Forbidden", "edge does not pass on impersonation: callers act as themselves")
		return
	}
	req := parseRequest(r.Method, path, r.URL.Query())
	start := time.Now()
	switch req.verb {
	case verbDiscovery:
		p.discovery(w, r, req, user)
	case verbList:
		p.list(w, r, req, user)
	case verbWatch:
		p.watch(w, r, req, user)
	case verbGet:
		if req.subresource != "" {
			p.write(w, r, req, user)
		} else {
			p.get(w, r, req, user)
		}
	case verbDeleteCollection:
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "delete collection is not served across member clusters; delete each object")
	default:
		p.write(w, r, req, user)
	}
	p.log.Debug("aggregated request", "verb", string(req.verb), "resource", req.resource, "duration", time.Since(start).String())
}

// Explain says what a request would do: the verb, the resource and which members it goes to.
func (p *Proxy) Explain(r *http.Request) map[string]any {
	path := strings.TrimPrefix(r.URL.Path, p.o.Prefix)
	req := parseRequest(r.Method, path, r.URL.Query())
	out := map[string]any{"verb": string(req.verb), "member_path": req.path}
	if req.resource != "" {
		res := req.resource
		if req.subresource != "" {
			res += "/" + req.subresource
		}
		out["resource"] = res
		if req.group != "" {
			out["group"] = req.group
		}
		if req.namespace != "" {
			out["namespace"] = req.namespace
		}
		if req.name != "" {
			out["name"] = req.name
		}
	}
	var names []string
	for _, m := range p.sorted {
		names = append(names, m.Name)
	}
	switch {
	case req.verb == verbDiscovery:
		out["members"] = []string{p.members[0].Name}
		out["rule"] = "discovery from the primary member (the first in config order that answers)"
	case req.verb == verbList || req.verb == verbWatch || (req.verb == verbGet && req.subresource == ""):
		out["members"] = names
		out["rule"] = "fan out to every member, merge"
	case req.verb == verbCreate && req.name == "":
		if p.o.Placement != "" {
			out["members"] = []string{p.o.Placement}
			out["rule"] = "collection create: the placement member"
		} else {
			out["rule"] = "collection create without a placement rule: 405"
		}
	case req.verb == verbDeleteCollection:
		out["rule"] = "not served across members: 405"
	default:
		out["members"] = names
		out["rule"] = "the member that owns the object (found by a get on every member, as the caller)"
	}
	return out
}

// fail answers a member's failure: its own Status for an error it answered, 503 naming it when it
// could not be reached.
func (p *Proxy) fail(w http.ResponseWriter, err error) {
	var me *memberError
	switch {
	case errors.As(err, &me) && me.code != 0 && len(me.body) > 0 && me.code != http.StatusForbidden:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(me.code)
		w.Write(me.body)
	case errors.As(err, &me) && me.code == http.StatusForbidden:
		writeStatus(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("member cluster %s: forbidden", me.member))
	case errors.As(err, &me) && me.code != 0:
		writeStatus(w, me.code, reasonOf(me.code), err.Error())
	case errors.As(err, &me):
		writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())
	case errors.Is(err, ErrBadResourceVersion):
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())
	case errors.Is(err, context.Canceled):
		// The client went away (or its watch was ended): no answer, and none made up (net/http
		// would send an empty 200 for a handler that wrote nothing).
		panic(http.ErrAbortHandler)
	default:
		writeStatus(w, http.StatusInternalServerError, "InternalError", err.Error())
	}
}
