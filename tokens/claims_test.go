package tokens

import (
	"errors"
	"testing"
	"time"
)

func TestParseJobClaimsUnverified(t *testing.T) {
	header := map[string]any{"alg": "RS256", "kid": "k"}
	exp := time.Unix(1_900_000_000, 0)
	cases := []struct {
		name   string
		claims map[string]any
		want   JobClaims
	}{
		{"newer form", map[string]any{"c": "3", "o": "1", "u": "16", "p": "rs", "g": "ya", "sub": "gid://gitlab/Ci::Build/42", "exp": exp.Unix()},
			JobClaims{Keys: Keys{Cell: 3, Organization: 1, User: 42, Project: 1000, Group: 1234, Present: KeyCell | KeyOrganization | KeyUser | KeyProject | KeyGroup}, JobID: 42, ExpiresAt: exp}},
		{"older form", map[string]any{"cell_id": 3, "organization_id": 1},
			JobClaims{Keys: Keys{Cell: 3, Organization: 1, Present: KeyCell | KeyOrganization}}},
		{"older form as strings", map[string]any{"cell_id": "12", "organization_id": "10"},
			JobClaims{Keys: Keys{Cell: 12, Organization: 10, Present: KeyCell | KeyOrganization}}},
		{"both forms agree", map[string]any{"c": "c", "cell_id": 12, "o": "1", "organization_id": 1},
			JobClaims{Keys: Keys{Cell: 12, Organization: 1, Present: KeyCell | KeyOrganization}}},
		{"both forms disagree: c wins", map[string]any{"c": "3", "cell_id": 4, "o": "1", "organization_id": 2},
			JobClaims{Keys: Keys{Cell: 3, Organization: 1, Present: KeyCell | KeyOrganization}, CellConflict: true}},
		{"c as a JSON number", map[string]any{"c": 12},
			JobClaims{Keys: Keys{Cell: 12, Present: KeyCell}}},
		{"null is absent", map[string]any{"c": nil, "cell_id": nil, "o": "1"},
			JobClaims{Keys: Keys{Organization: 1, Present: KeyOrganization}}},
		{"other subject", map[string]any{"sub": "gid://gitlab/User/42"}, JobClaims{}},
		{"bad job id", map[string]any{"sub": "gid://gitlab/Ci::Build/x"}, JobClaims{}},
		{"no claims", map[string]any{}, JobClaims{}},
		{"fractional exp, truncated to seconds", map[string]any{"exp": 1_900_000_000.5}, JobClaims{ExpiresAt: exp}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseJobClaimsUnverified(unsignedJWT(t, header, c.claims))
			if err != nil {
				t.Fatalf("ParseJobClaimsUnverified: got error %v, want nil", err)
			}
			if !got.ExpiresAt.Equal(c.want.ExpiresAt) {
				t.Errorf("ExpiresAt: got %v, want %v", got.ExpiresAt, c.want.ExpiresAt)
			}
			got.ExpiresAt, c.want.ExpiresAt = time.Time{}, time.Time{}
			if got != c.want {
				t.Errorf("claims: got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseJobClaimsUnverifiedErrors(t *testing.T) {
	header := map[string]any{"alg": "RS256"}
	cases := []struct {
		name    string
		jwt     string
		wantBad bool // ErrBadClaim as well
	}{
		{"not a JWT", "abc", false},
		{"empty", "", false},
		{"claims not base64url", "eyJ.!!!.c2ln", false},
		{"claims not JSON", "eyJ.bm9wZQ.c2ln", false},
		{"claims an array", unsignedJWT(t, header, []int{1}), false},
		{"c not base36", unsignedJWT(t, header, map[string]any{"c": "Z!"}), true},
		{"c negative", unsignedJWT(t, header, map[string]any{"c": -1}), true},
		{"c an object", unsignedJWT(t, header, map[string]any{"c": map[string]any{}}), true},
		{"cell_id fractional", unsignedJWT(t, header, map[string]any{"cell_id": 1.5}), true},
		{"cell_id base36", unsignedJWT(t, header, map[string]any{"cell_id": "c"}), true},
		{"exp a string", unsignedJWT(t, header, map[string]any{"exp": "tomorrow"}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseJobClaimsUnverified(c.jwt)
			if !errors.Is(err, ErrInvalidJWT) {
				t.Fatalf("ParseJobClaimsUnverified: got %+v, %v, want error wrapping ErrInvalidJWT", got, err)
			}
			if errors.Is(err, ErrBadClaim) != c.wantBad {
				t.Errorf("errors.Is(ErrBadClaim): got %v, want %v (%v)", !c.wantBad, c.wantBad, err)
			}
		})
	}
}
