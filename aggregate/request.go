package aggregate

import (
	"net/http"
	"net/url"
	"strings"
)

// verb is what a request does, as the Kubernetes API names it.
type verb string

const (
	verbDiscovery        verb = "discovery"
	verbList             verb = "list"
	verbWatch            verb = "watch"
	verbGet              verb = "get"
	verbCreate           verb = "create"
	verbUpdate           verb = "update"
	verbPatch            verb = "patch"
	verbDelete           verb = "delete"
	verbDeleteCollection verb = "deletecollection"
)

// request is a parsed Kubernetes API request, path relative to the aggregation prefix.
type request struct {
	verb        verb
	path        string // the member's path: /api/v1/..., /apis/<g>/<v>/...
	group       string
	version     string
	namespace   string
	resource    string
	name        string
	subresource string
}

// parseRequest follows the apiserver's own RequestInfo rules: /api/<v> or /apis/<g>/<v>, then
// namespaces/<ns>/<resource> (unless the next part is a namespace's own status or finalize),
// <name>, <subresource>. Anything else is discovery, served by the primary member.
func parseRequest(method, path string, q url.Values) request {
	r := request{path: path, verb: verbDiscovery}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		r.version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.group, r.version, parts = parts[1], parts[2], parts[3:]
	default:
		return r
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		r.namespace = parts[1]
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}
	r.resource = parts[0]
	if len(parts) > 1 {
		r.name = parts[1]
	}
	if len(parts) > 2 {
		r.subresource = strings.Join(parts[2:], "/")
	}
	watch := q.Get("watch") == "true" || q.Get("watch") == "1"
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case r.name == "" && watch:
			r.verb = verbWatch
		case r.name == "":
			r.verb = verbList
		default:
			r.verb = verbGet
		}
	case http.MethodPost:
		r.verb = verbCreate
	case http.MethodPut:
		r.verb = verbUpdate
	case http.MethodPatch:
		r.verb = verbPatch
	case http.MethodDelete:
		r.verb = verbDelete
		if r.name == "" {
			r.verb = verbDeleteCollection
		}
	}
	return r
}
