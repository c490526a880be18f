// Package workspaceauth guards workspace URLs https://<port>-<workspace>.<domain>/: strict host
// parsing, an OAuth 2 / OIDC login on one auth host, a session cookie bound to one workspace host,
// and an authorizer asked again every recheck interval (workspaces.md). It is a leaf: it knows
// nothing of the router, and forwards an allowed request with the function it is given.
package workspaceauth
