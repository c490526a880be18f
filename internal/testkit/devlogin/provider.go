// Package devlogin runs a real OpenID Provider: zitadel/oidc's certified op package, with the
// in-memory storage and login page of its example server. It is the development login of
// the demo (cmd/edge-demo) and the provider of the tests (internal/testkit/oidctest); never a production identity
// provider.
package devlogin

import (
	"net"
	"net/http"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// User is an account that can log in at the provider.
type User struct {
	Username, Password string
	// Subject is the ID token's sub; "sub-" + Username when empty.
	Subject string
	Email   string
}

// Options configure the one OAuth client the provider knows, and its users.
type Options struct {
	ClientID, ClientSecret string // "edge" and "edge-secret" when empty
	RedirectURIs           []string
	Users                  []User
}

// Provider is a running OpenID Provider.
type Provider struct {
	// Issuer is exactly the issuer discovery returns (http://HOST:PORT, no trailing slash).
	Issuer                 string
	ClientID, ClientSecret string
}

// Serve runs a provider on ln until the returned server is closed. Its client is a confidential
// web client (client_secret_basic or client_secret_post) in zitadel's dev mode, so plain-http
// redirect URIs on *.localhost and 127.0.0.1 are allowed; every authorization request must carry
// an S256 code_challenge.
func Serve(ln net.Listener, o Options) (*Provider, *http.Server) {
	if o.ClientID == "" {
		o.ClientID = "edge"
	}
	if o.ClientSecret == "" {
		o.ClientSecret = "edge-secret"
	}
	issuer := "http://" + ln.Addr().String()
	client := storage.WebClient(o.ClientID, o.ClientSecret, o.RedirectURIs...)
	store := pkceStorage{storage.NewStorageWithClients(newUsers(o.Users), map[string]*storage.Client{o.ClientID: client})}
	// A nil logger keeps exampleop from replacing the process's default slog logger.
	srv := &http.Server{Handler: exampleop.SetupServer(issuer, store, nil, false), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &Provider{Issuer: issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret}, srv
}
