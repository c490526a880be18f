package cellrouter

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"gitlab.com/edge/edge/tokens"
)

func newES256(t testing.TB) (*ecdsa.PrivateKey, *tokens.Verifier) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tokens.NewVerifier(tokens.VerifierOptions{
		Keys:      []tokens.Key{{ID: "k1", Algorithm: "ES256", Public: &priv.PublicKey}},
		Issuer:    "https://gitlab.example.com",
		Audience:  "gitlab-authz-token",
		CacheSize: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	return priv, v
}

func jobToken(t testing.TB, key any, alg string, cell uint64, exp time.Time, audience string) string {
	jwt, err := tokens.MintJobJWT(tokens.MintJobOptions{
		Key: key, Algorithm: alg, KID: "k1", Issuer: "https://gitlab.example.com", Audience: audience,
		Keys: tokens.Keys{}.Set(tokens.KeyCell, cell).Set(tokens.KeyOrganization, 1), JobID: 42,
		IssuedAt: time.Now(), ExpiresAt: exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	return "glcbt-" + jwt
}

func TestJobTokenJWT(t *testing.T) {
	priv, verifier := newES256(t)
	other, _ := newES256(t)
	hour := time.Now().Add(time.Hour)
	tests := []struct {
		name       string
		token      string
		reject     bool
		wantStatus int
		wantCell   uint64
	}{
		{"verified routes to its cell", jobToken(t, priv, "ES256", 3, hour, "gitlab-authz-token"), false, 200, 3},
		{"signed by another key is ignored", jobToken(t, other, "ES256", 3, hour, "gitlab-authz-token"), false, 200, 1},
		{"expired is ignored", jobToken(t, priv, "ES256", 3, time.Now().Add(-time.Minute), "gitlab-authz-token"), false, 200, 1},
		{"wrong audience is ignored", jobToken(t, priv, "ES256", 3, hour, "other"), false, 200, 1},
		{"invalid with on_invalid reject is 401", jobToken(t, other, "ES256", 3, hour, "gitlab-authz-token"), true, 401, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Verifier, o.RejectInvalid = verifier, tt.reject })
			resp, _ := do(t, newReq(t, "GET", f.front.URL+"/api/v4/jobs/42/artifacts", nil, "JOB-TOKEN", tt.token))
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.wantCell == 0 {
				f.none(t)
				return
			}
			f.only(t, tt.wantCell)
		})
	}
}

func TestUnverifiedRoutingIsOptIn(t *testing.T) {
	priv, _ := newES256(t)
	tok := jobToken(t, priv, "ES256", 3, time.Now().Add(time.Hour), "gitlab-authz-token")
	f := newFixture(t, func(o *Options) { o.RouteUnverified = true })
	do(t, newReq(t, "GET", f.front.URL+"/api/v4/jobs/42/artifacts", nil, "JOB-TOKEN", tok))
	f.only(t, 3)

	f = newFixture(t, nil)
	resp, _ := do(t, newReq(t, "GET", f.front.URL+"/api/v4/jobs/42/artifacts", nil, "JOB-TOKEN", tok))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	f.only(t, 1)
}
