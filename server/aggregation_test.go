package server

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"gitlab.com/edge/edge/aggregate"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/tokens"
)

// A reload ends the open watches of members it removes or changes, and only those.
func TestReloadEndsWatchesOfChangedMembers(t *testing.T) {
	cluster := func(name, server string) config.ClusterMember {
		return config.ClusterMember{Name: name, Server: server, Token: []byte("t")}
	}
	old := &config.Config{Aggregation: &config.Aggregation{Clusters: []config.ClusterMember{
		cluster("a", "https://a"), cluster("b", "https://b"), cluster("c", "https://c")}}}
	tests := []struct {
		name  string
		next  []config.ClusterMember
		ended bool
	}{
		{"member added", []config.ClusterMember{cluster("a", "https://a"), cluster("b", "https://b"), cluster("c", "https://c"), cluster("d", "https://d")}, false},
		{"nothing changed", old.Aggregation.Clusters, false},
		{"member removed", []config.ClusterMember{cluster("a", "https://a"), cluster("b", "https://b")}, true},
		{"member's server changed", []config.ClusterMember{cluster("a", "https://a"), cluster("b", "https://b2"), cluster("c", "https://c")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &aggregation{watches: aggregate.NewWatches(), members: old.Aggregation.Clusters, log: slog.New(slog.DiscardHandler)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := aggregate.TrackWatch(g.watches, []string{"a", "b", "c"}, cancel)
			defer done()
			g.endChangedWatches(tt.next)
			if got := ctx.Err() != nil; got != tt.ended {
				t.Errorf("watch ended: got %v, want %v", got, tt.ended)
			}
		})
	}
}

// The aggregation's caller JWTs are verified by tokens, with the configured keys, issuer and
// audience; without keys there is no verifier.
func TestCallerVerifier(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	verify, err := callerVerifier(config.AggregationAuth{
		Keys:   []config.KeyRef{{KID: "k1", Alg: "HS256", PEM: secret}},
		Issuer: "https://idp.example", Audience: "edge-k8s",
	})
	if err != nil || verify == nil {
		t.Fatalf("callerVerifier: %v, %v", verify != nil, err)
	}
	sign := func(claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := time.Now().Add(time.Hour).Unix()
	u, err := verify(sign(jwt.MapClaims{"sub": "alice", "groups": []string{"dev"}, "iss": "https://idp.example", "aud": "edge-k8s", "exp": exp}))
	if err != nil || u.Name != "alice" || len(u.Groups) != 1 || u.Groups[0] != "dev" {
		t.Errorf("good token: got %+v, %v", u, err)
	}
	if _, err := verify(sign(jwt.MapClaims{"sub": "alice", "iss": "https://idp.example", "aud": "other", "exp": exp})); !errors.Is(err, tokens.ErrAudience) {
		t.Errorf("other audience: got %v, want tokens.ErrAudience", err)
	}
	if v, err := callerVerifier(config.AggregationAuth{}); v != nil || err != nil {
		t.Errorf("no keys: got a verifier %v, %v; want none", v != nil, err)
	}
}
