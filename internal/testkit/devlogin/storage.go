package devlogin

import (
	"context"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// pkceStorage is the example's in-memory storage, refusing authorization requests without an S256
// code_challenge: zitadel checks a verifier against a challenge when there is one, but requires one
// only of public clients.
type pkceStorage struct {
	*storage.Storage
}

func (s pkceStorage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE with code_challenge_method S256 is required")
	}
	return s.Storage.CreateAuthRequest(ctx, req, userID)
}

func (s pkceStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return claimsInIDToken{c}, nil
}

// claimsInIDToken puts the claims of the profile and email scopes (preferred_username among them)
// into the ID token even though an access token is issued too, as GitLab, Keycloak and others do;
// OIDC Core 5.4 alone would leave them to the userinfo endpoint.
type claimsInIDToken struct {
	op.Client
}

func (claimsInIDToken) IDTokenUserinfoClaimsAssertion() bool { return true }

// users is the example storage's UserStore over the users a test gave.
type users map[string]*storage.User // by subject

func newUsers(list []User) users {
	us := users{}
	for _, u := range list {
		sub := u.Subject
		if sub == "" {
			sub = "sub-" + u.Username
		}
		us[sub] = &storage.User{
			ID:            sub,
			Username:      u.Username,
			Password:      u.Password,
			FirstName:     u.Username,
			LastName:      "Test",
			Email:         u.Email,
			EmailVerified: u.Email != "",
		}
	}
	return us
}

func (us users) GetUserByID(id string) *storage.User { return us[id] }

func (us users) GetUserByUsername(name string) *storage.User {
	for _, u := range us {
		if u.Username == name {
			return u
		}
	}
	return nil
}

// ExampleClientID names the example's JWT-profile service account, which these tests never use.
func (us users) ExampleClientID() string { return "service" }
