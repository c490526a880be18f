package aggregate

import (
	"net/url"
	"testing"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		method, path, query string
		want                request
	}{
		{"GET", "/api", "", request{verb: verbDiscovery}},
		{"GET", "/apis/apps/v1", "", request{verb: verbDiscovery}},
		{"GET", "/version", "", request{verb: verbDiscovery}},
		{"GET", "/api/v1/pods", "", request{verb: verbList, version: "v1", resource: "pods"}},
		{"GET", "/api/v1/pods", "watch=1", request{verb: verbWatch, version: "v1", resource: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods", "watch=true", request{verb: verbWatch, version: "v1", namespace: "ns", resource: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods/p1", "", request{verb: verbGet, version: "v1", namespace: "ns", resource: "pods", name: "p1"}},
		{"GET", "/api/v1/namespaces/ns/pods/p1/log", "", request{verb: verbGet, version: "v1", namespace: "ns", resource: "pods", name: "p1", subresource: "log"}},
		{"POST", "/api/v1/namespaces/ns/pods/p1/exec", "", request{verb: verbCreate, version: "v1", namespace: "ns", resource: "pods", name: "p1", subresource: "exec"}},
		{"GET", "/api/v1/namespaces", "", request{verb: verbList, version: "v1", resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/ns", "", request{verb: verbGet, version: "v1", namespace: "ns", resource: "namespaces", name: "ns"}},
		{"PUT", "/api/v1/namespaces/ns/finalize", "", request{verb: verbUpdate, version: "v1", namespace: "ns", resource: "namespaces", name: "ns", subresource: "finalize"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "", request{verb: verbPatch, group: "apps", version: "v1", namespace: "ns", resource: "deployments", name: "d", subresource: "scale"}},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", "", request{verb: verbCreate, group: "apps", version: "v1", namespace: "ns", resource: "deployments"}},
		{"DELETE", "/api/v1/namespaces/ns/pods", "", request{verb: verbDeleteCollection, version: "v1", namespace: "ns", resource: "pods"}},
		{"PUT", "/api/v1/namespaces/ns/pods/p", "", request{verb: verbUpdate, version: "v1", namespace: "ns", resource: "pods", name: "p"}},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		got := parseRequest(tt.method, tt.path, q)
		tt.want.path = tt.path
		if got != tt.want {
			t.Errorf("%s %s?%s: got %+v, want %+v", tt.method, tt.path, tt.query, got, tt.want)
		}
	}
}
