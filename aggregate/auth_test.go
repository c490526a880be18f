package aggregate

import (
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestAuthenticatorJWT: a bearer token that looks like a JWT goes to the verifier it was given;
// what it says is the user, what it refuses is unauthenticated; a static token never reaches it.
func TestAuthenticatorJWT(t *testing.T) {
	refused := errors.New("signature")
	var asked []string
	a, err := NewAuthenticator([]byte("alice-token,alice,1\n"), func(token string) (User, error) {
		asked = append(asked, token)
		if token == "h.good.s" {
			return User{Name: "bob", Groups: []string{"dev"}}, nil
		}
		return User{}, refused
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := func(token string) (User, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return a.Authenticate(t.Context(), r)
	}
	if u, err := auth("h.good.s"); err != nil || u.Name != "bob" || !slices.Equal(u.Groups, []string{"dev"}) {
		t.Errorf("good JWT: got %+v, %v; want bob in dev", u, err)
	}
	if _, err := auth("h.bad.s"); !errors.Is(err, ErrUnauthenticated) || !errors.Is(err, refused) {
		t.Errorf("refused JWT: got %v, want ErrUnauthenticated wrapping the verifier's error", err)
	}
	if u, err := auth("alice-token"); err != nil || u.Name != "alice" {
		t.Errorf("static token: got %+v, %v; want alice", u, err)
	}
	if _, err := auth("not-a.jwt"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("unknown token: got %v, want ErrUnauthenticated", err)
	}
	if want := []string{"h.good.s", "h.bad.s"}; !slices.Equal(asked, want) {
		t.Errorf("the verifier was asked %q, want %q", asked, want)
	}
	if _, err := NewAuthenticator(nil, nil); err == nil {
		t.Errorf("no tokens and no verifier: want an error")
	}
}
