package browsertest_test

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"gitlab.com/edge/edge/internal/testkit/browsertest"
	"gitlab.com/edge/edge/internal/testkit/oidctest"
)

// relyingParty is a minimal OAuth client: "/" sends the browser to the provider, "/callback" takes
// the code back, checks state, exchanges the code with the PKCE verifier, verifies the ID token and
// shows who logged in.
type relyingParty struct {
	conf     *oauth2.Config
	verifier *oidc.IDTokenVerifier

	mu      sync.Mutex
	pending map[string]login // by state
}

type login struct{ pkce, nonce string }

func (rp *relyingParty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		state, l := oauth2.GenerateVerifier(), login{oauth2.GenerateVerifier(), oauth2.GenerateVerifier()}
		rp.mu.Lock()
		rp.pending[state] = l
		rp.mu.Unlock()
		http.Redirect(w, r, rp.conf.AuthCodeURL(state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.pkce)), http.StatusFound)
	case "/callback":
		user, err := rp.callback(r)
		if err != nil {
			user = "error: " + err.Error()
		}
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><p id="result">%s</p></body></html>`, html.EscapeString(user))
	default:
		http.NotFound(w, r)
	}
}

func (rp *relyingParty) callback(r *http.Request) (string, error) {
	state := r.URL.Query().Get("state")
	rp.mu.Lock()
	l, ok := rp.pending[state]
	delete(rp.pending, state)
	rp.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("unknown state %q (error %q)", state, r.URL.Query().Get("error"))
	}
	tok, err := rp.conf.Exchange(r.Context(), r.URL.Query().Get("code"), oauth2.VerifierOption(l.pkce))
	if err != nil {
		return "", fmt.Errorf("exchange: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := rp.verifier.Verify(r.Context(), raw)
	if err != nil {
		return "", fmt.Errorf("ID token: %w", err)
	}
	if idt.Nonce != l.nonce {
		return "", fmt.Errorf("nonce: got %q", idt.Nonce)
	}
	var c struct {
		PreferredUsername string `json:"preferred_username"`
	}
	if err := idt.Claims(&c); err != nil {
		return "", err
	}
	return "logged in as " + c.PreferredUsername, nil
}

func TestLoginAtTheProviderInTheBrowser(t *testing.T) {
	rpSrv := httptest.NewUnstartedServer(nil)
	// The relying party is reached by a *.localhost name over plain http, as edge's auth host is in
	// development; the provider is on 127.0.0.1.
	_, port, err := net.SplitHostPort(rpSrv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rpURL := "http://rp.localhost:" + port
	p := oidctest.Start(t, oidctest.Options{
		RedirectURIs: []string{rpURL + "/callback"},
		Users:        []oidctest.User{{Username: "alice", Password: "alice-pw"}},
	})
	provider, err := oidc.NewProvider(t.Context(), p.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	rpSrv.Config.Handler = &relyingParty{
		conf: &oauth2.Config{
			ClientID:     p.ClientID,
			ClientSecret: p.ClientSecret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  rpURL + "/callback",
			Scopes:       []string{oidc.ScopeOpenID, "profile"},
		},
		verifier: provider.Verifier(&oidc.Config{ClientID: p.ClientID}),
		pending:  map[string]login{},
	}
	rpSrv.Start()
	t.Cleanup(rpSrv.Close)

	ctx := browsertest.New(t)
	// Twice: the provider keeps no session of its own, so the second visit logs in again.
	for i := range 2 {
		// exampleop's login page: inputs #username and #password, one submit button.
		browsertest.Open(t, ctx, rpURL+"/", "#username")
		browsertest.Type(t, ctx, "#username", "alice")
		browsertest.Type(t, ctx, "#password", "alice-pw")
		browsertest.Click(t, ctx, "button[type=submit]")
		if got, want := browsertest.Text(t, ctx, "#result"), "logged in as alice"; got != want {
			t.Fatalf("login %d: got %q, want %q", i+1, got, want)
		}
		if got, want := browsertest.Location(t, ctx), rpURL+"/callback?"; !strings.HasPrefix(got, want) {
			t.Errorf("login %d: the browser is at %s, want %s...", i+1, got, want)
		}
	}
}
