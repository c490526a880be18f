// Package aggregate serves one Kubernetes API over several member clusters (aggregation.md):
// reads fan out and merge (lists, Tables, watches, under a global resourceVersion), writes and
// subresources go to the member that owns the object, each member deciding with its own RBAC
// under the caller's impersonated identity. It is a leaf: it knows nothing of the router.
package aggregate
