package front

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"gitlab.com/edge/edge/hop"
)

// A Route is one kind of request the front serves, declared once by the module that serves it:
// what it matches, its name and traffic label, the protocol switch it allows, its handler, how
// `edge explain` describes a request on it, and its refusals' format. A new route kind is one
// Route added to the table.
type Route struct {
	Name    string
	Traffic string // the edge_requests_total kind label; "" means Name
	Upgrade Upgrade

	// What it matches, one of: a host exactly (port ignored, any case), a domain and every name
	// below it, a path exactly, a path prefix, any path Paths says, or every request no other
	// route took (Fallback; one per table).
	Host     string
	Domain   string
	Path     string
	Prefix   string
	Paths    func(path string) bool
	Fallback bool

	// StrictPath refuses every odd path (see paths.go) on this route, not only those a backend
	// could read as another route: runner traffic, and the aggregation prefix, whose handler
	// parses the path as the Kubernetes API does.
	StrictPath bool

	// Handler serves the route; nil: its feature is off on this edge, and its requests are
	// refused 404 not_configured, with Off as the message when set.
	Handler http.Handler
	Off     string
	// Explain says what the handler would do with a request, without doing it: the rule and the
	// fields `edge explain` prints; an error is the refusal it would answer. nil: Rule alone.
	Explain func(r *http.Request) (rule string, fields map[string]any, err error)
	Rule    string
	// Record, when set, fills in what every request on the route records before its handler or
	// its refusal: the runner route's requests name their token kind ("none" until the router
	// finds one), those the front refuses included.
	Record func(*hop.Record)
	// WriteError answers the front's refusals of this route (the path rule, the header policy) in
	// the route's own format, as its handler answers errors: the aggregation's is a Kubernetes
	// Status, which kubectl shows. nil: hop.Write's JSON.
	WriteError func(w http.ResponseWriter, status int, cause, message string)
}

func (r *Route) traffic() string {
	if r.Traffic != "" {
		return r.Traffic
	}
	return r.Name
}

// notConfigured is the refusal of a route whose feature is off, or nil.
func (r *Route) notConfigured() error {
	switch {
	case r.Handler != nil:
		return nil
	case r.Off == "":
		return hop.ErrNotConfigured
	}
	return fmt.Errorf("%w: %s", hop.ErrNotConfigured, r.Off)
}

// errorWriter is the route's refusal format.
func (r *Route) errorWriter() func(http.ResponseWriter, int, string, string) {
	if r.WriteError != nil {
		return r.WriteError
	}
	return hop.Write
}

// Routes is the whole route table of the public and internal listeners, built from one config
// and swapped whole on a reload. Host routes are matched first (exact hosts before domains), then
// exact paths, prefixes, path sets and the fallback, each in the order added.
type Routes struct {
	Headers   HeaderPolicy // the public listener's
	AccessLog bool
	// Internal serves the internal listener, whose peers are other edges; nil: no internal
	// listener.
	Internal *Route
	// Retire runs when a newer table replaces this one (a reload): the old cell proxies close
	// their idle connections.
	Retire func()

	hosts, paths []*Route
	fallback     *Route
}

// Add puts routes in the table.
func (rt *Routes) Add(routes ...Route) {
	for i := range routes {
		r := &routes[i]
		switch {
		case r.Host != "" || r.Domain != "":
			rt.hosts = append(rt.hosts, r)
		case r.Fallback:
			rt.fallback = r
		default:
			rt.paths = append(rt.paths, r)
		}
	}
}

// check tells what keeps a table from being put in force.
func (rt *Routes) check() error {
	if rt == nil || rt.fallback == nil {
		return errors.New("front: a route table needs a fallback route")
	}
	return nil
}

// match is a request's route and, for a refusal, why.
type match struct {
	route *Route
	err   error
}

// match decides a request's route: host first, then path. serve and explain both call it.
func (rt *Routes) match(r *http.Request) match {
	if len(rt.hosts) > 0 {
		if route := rt.hostRoute(hostOnly(r.Host)); route != nil {
			return match{route: route}
		}
	}
	route := rt.pathRoute(r.URL.Path)
	if err := checkPath(r.URL, rt.pathRoute); err != nil {
		return match{route: route, err: err}
	}
	return match{route: route, err: route.notConfigured()}
}

func (rt *Routes) hostRoute(host string) *Route {
	for _, r := range rt.hosts {
		if r.Host != "" && strings.EqualFold(host, hostOnly(r.Host)) {
			return r
		}
	}
	for _, r := range rt.hosts {
		if r.Domain != "" && isBelow(host, r.Domain) {
			return r
		}
	}
	return nil
}

// pathRoute classifies a path alone: exact paths, prefixes, path sets, then the fallback.
func (rt *Routes) pathRoute(path string) *Route {
	for _, r := range rt.paths {
		if r.Path != "" && path == r.Path {
			return r
		}
	}
	for _, r := range rt.paths {
		if r.Prefix != "" && under(path, r.Prefix) {
			return r
		}
	}
	for _, r := range rt.paths {
		if r.Paths != nil && r.Paths(path) {
			return r
		}
	}
	return rt.fallback
}

// under tells whether path is below prefix: any path it begins when it ends in "/", else the
// prefix itself and the paths below it ("/k8s", "/k8s/..." but not "/k8sx").
func under(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || prefix[len(prefix)-1] == '/' || path[len(prefix)] == '/'
}

func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// isBelow tells whether host is domain or any name below it: the whole workspace domain is the
// workspace route, whose handler refuses what is not exactly <port>-<name>.<domain> with 404.
func isBelow(host, domain string) bool {
	if strings.EqualFold(host, domain) {
		return true
	}
	return len(host) > len(domain)+1 && host[len(host)-len(domain)-1] == '.' && strings.EqualFold(host[len(host)-len(domain):], domain)
}
