// Package oidctest runs a real OpenID Provider in-process for tests (internal/testkit/devlogin: zitadel/
// oidc's certified op package) and logs in at it as a browser would.
package oidctest

import (
	"net"
	"testing"

	"gitlab.com/edge/edge/internal/testkit/devlogin"
)

// User, Options and Provider are devlogin's.
type (
	User     = devlogin.User
	Options  = devlogin.Options
	Provider struct{ *devlogin.Provider }
)

// Start runs a provider on 127.0.0.1:0 until the test ends (see devlogin.Serve).
func Start(t testing.TB, o Options) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oidctest: %v", err)
	}
	p, srv := devlogin.Serve(ln, o)
	t.Cleanup(func() { srv.Close() })
	return &Provider{p}
}
