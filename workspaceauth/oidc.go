package workspaceauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// relyingParty is edge as the OAuth client of the provider: x/oauth2 for the code flow with
// PKCE, go-oidc for discovery and ID token verification.
type relyingParty struct {
	config   oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// get discovers the provider the first time it answers, and keeps it.
func (p *provider) get(ctx context.Context) (*relyingParty, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rely != nil {
		return p.rely, nil
	}
	ctx = oidc.ClientContext(ctx, p.o.HTTPClient)
	disc, err := oidc.NewProvider(ctx, p.o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("OIDC discovery at %s: %w", p.o.Issuer, err)
	}
	p.rely = &relyingParty{
		config: oauth2.Config{
			ClientID: p.o.ClientID, ClientSecret: p.o.ClientSecret, Endpoint: disc.Endpoint(),
			RedirectURL: p.o.RedirectURL, Scopes: p.o.Scopes,
		},
		verifier: disc.Verifier(&oidc.Config{ClientID: p.o.ClientID}),
	}
	return p.rely, nil
}

// authURL is where the browser logs in: the code flow with PKCE S256 and a nonce.
func (rp *relyingParty) authURL(state, verifier, nonce string) string {
	return rp.config.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
}

// exchange trades the code (with the PKCE verifier) for tokens and verifies the ID token: issuer,
// audience, expiry, signature, and the login's nonce.
func (rp *relyingParty) exchange(ctx context.Context, client *http.Client, code, verifier, nonce string) (User, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
	tok, err := rp.config.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return User{}, fmt.Errorf("token exchange: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return User{}, errors.New("the provider answered without an ID token")
	}
	idt, err := rp.verifier.Verify(oidc.ClientContext(ctx, client), raw)
	if err != nil {
		return User{}, fmt.Errorf("ID token: %w", err)
	}
	if idt.Nonce != nonce {
		return User{}, errNonce
	}
	var claims struct {
		Subject  string `json:"sub"`
		Username string `json:"preferred_username"`
	}
	if err := idt.Claims(&claims); err != nil {
		return User{}, fmt.Errorf("ID token claims: %w", err)
	}
	if claims.Subject == "" {
		return User{}, errors.New("ID token without sub")
	}
	return User{ID: claims.Subject, Username: claims.Username}, nil
}
