package oidctest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"gitlab.com/edge/edge/internal/testkit/oidctest"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

const redirectURI = "http://auth.ws.localhost:8080/oauth/callback"

// relyingParty is what edge does around the provider: discovery, the OAuth config, the verifier.
type relyingParty struct {
	p        *oidctest.Provider
	conf     *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

func start(t *testing.T) relyingParty {
	t.Helper()
	p := oidctest.Start(t, oidctest.Options{
		ClientID:     "edge-test",
		ClientSecret: "s3cret",
		RedirectURIs: []string{redirectURI},
		Users: []oidctest.User{
			{Username: "alice", Password: "alice-pw"},
			{Username: "bob", Password: "bob-pw", Subject: "u-42"},
		},
	})
	// go-oidc refuses a discovery document whose issuer differs from the one asked for.
	provider, err := oidc.NewProvider(t.Context(), p.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	return relyingParty{
		p: p,
		conf: &oauth2.Config{
			ClientID:     p.ClientID,
			ClientSecret: p.ClientSecret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  redirectURI,
			Scopes:       []string{oidc.ScopeOpenID, "profile"},
		},
		verifier: provider.Verifier(&oidc.Config{ClientID: p.ClientID}),
	}
}

// claims is what edge reads from the ID token.
type claims struct {
	Subject           string `json:"sub"`
	PreferredUsername string `json:"preferred_username"`
}

func TestCodeFlowWithPKCE(t *testing.T) {
	rp := start(t)
	browser := testnet.Client()
	for _, tc := range []struct {
		name, username, password, wantSub string
	}{
		{"alice", "alice", "alice-pw", "sub-alice"},
		{"alice again", "alice", "alice-pw", "sub-alice"},
		{"bob", "bob", "bob-pw", "u-42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			state, nonce, pkce := oauth2.GenerateVerifier(), oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
			authURL := rp.conf.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(pkce))

			back, err := rp.p.Login(ctx, browser, authURL, tc.username, tc.password)
			if err != nil {
				t.Fatalf("login: %v", err)
			}
			if got := back.Scheme + "://" + back.Host + back.Path; got != redirectURI {
				t.Errorf("redirect back: got %s, want %s", got, redirectURI)
			}
			if got := back.Query().Get("state"); got != state {
				t.Errorf("state: got %q, want %q", got, state)
			}

			tok, err := rp.conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(pkce))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			raw, ok := tok.Extra("id_token").(string)
			if !ok {
				t.Fatal("token response has no id_token")
			}
			idt, err := rp.verifier.Verify(ctx, raw)
			if err != nil {
				t.Fatalf("verify ID token: %v", err)
			}
			if idt.Nonce != nonce {
				t.Errorf("nonce: got %q, want %q", idt.Nonce, nonce)
			}
			var c claims
			if err := idt.Claims(&c); err != nil {
				t.Fatalf("claims: %v", err)
			}
			if c.Subject != tc.wantSub {
				t.Errorf("sub: got %q, want %q", c.Subject, tc.wantSub)
			}
			if c.PreferredUsername != tc.username {
				t.Errorf("preferred_username: got %q, want %q", c.PreferredUsername, tc.username)
			}

			if _, err := rp.conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(pkce)); err == nil {
				t.Error("the same code was exchanged twice")
			}
		})
	}
}

func TestPKCEIsEnforced(t *testing.T) {
	rp := start(t)
	ctx := t.Context()
	pkce := oauth2.GenerateVerifier()

	t.Run("wrong verifier", func(t *testing.T) {
		back, err := rp.p.Login(ctx, testnet.Client(), rp.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(pkce)), "alice", "alice-pw")
		if err != nil {
			t.Fatalf("login: %v", err)
		}
		_, err = rp.conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
			t.Errorf("exchange with another verifier: got %v, want invalid_grant", err)
		}
	})
	t.Run("no verifier", func(t *testing.T) {
		back, err := rp.p.Login(ctx, testnet.Client(), rp.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(pkce)), "alice", "alice-pw")
		if err != nil {
			t.Fatalf("login: %v", err)
		}
		_, err = rp.conf.Exchange(ctx, back.Query().Get("code"))
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_request" {
			t.Errorf("exchange without a verifier: got %v, want invalid_request", err)
		}
	})
	for _, tc := range []struct {
		name string
		opts []oauth2.AuthCodeOption
	}{
		{"no challenge", nil},
		{"plain challenge", []oauth2.AuthCodeOption{
			oauth2.SetAuthURLParam("code_challenge", pkce),
			oauth2.SetAuthURLParam("code_challenge_method", "plain"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			back, err := rp.p.Login(ctx, testnet.Client(), rp.conf.AuthCodeURL("st", tc.opts...), "alice", "alice-pw")
			if !errors.Is(err, oidctest.ErrAuthorization) {
				t.Fatalf("login: got %v, want ErrAuthorization", err)
			}
			if got := back.Query().Get("error"); got != "invalid_request" {
				t.Errorf("error: got %q, want invalid_request", got)
			}
			if got := back.Query().Get("state"); got != "st" {
				t.Errorf("state: got %q, want st", got)
			}
		})
	}
}

func TestLoginRefusals(t *testing.T) {
	rp := start(t)
	pkce := oauth2.S256ChallengeOption(oauth2.GenerateVerifier())
	for _, tc := range []struct {
		name               string
		conf               func(oauth2.Config) oauth2.Config
		username, password string
		want               error
	}{
		{"wrong password", nil, "alice", "bob-pw", oidctest.ErrLoginRefused},
		{"unknown user", nil, "carol", "x", oidctest.ErrLoginRefused},
		{"unknown client", func(c oauth2.Config) oauth2.Config { c.ClientID = "other"; return c }, "alice", "alice-pw", nil},
		{"unregistered redirect URI", func(c oauth2.Config) oauth2.Config { c.RedirectURL = "http://evil.localhost/cb"; return c }, "alice", "alice-pw", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := *rp.conf
			if tc.conf != nil {
				conf = tc.conf(conf)
			}
			back, err := rp.p.Login(t.Context(), testnet.Client(), conf.AuthCodeURL("st", pkce), tc.username, tc.password)
			if err == nil {
				t.Fatalf("login succeeded, back to %s", back.Redacted())
			}
			if back != nil {
				t.Errorf("login failed (%v) but redirected to %s", err, back.Redacted())
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error: got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestLoginRefusesOtherURLs(t *testing.T) {
	rp := start(t)
	_, err := rp.p.Login(context.Background(), http.DefaultClient, "http://example.localhost/authorize", "alice", "alice-pw")
	if !errors.Is(err, oidctest.ErrNotProvider) {
		t.Errorf("got %v, want ErrNotProvider", err)
	}
}
