package main

import (
	"context"
	"log/slog"
	"testing"

	"gitlab.com/edge/edge/aggregate"
	"gitlab.com/edge/edge/config"
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
			parts := &aggregationParts{watches: aggregate.NewWatches()}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := aggregate.TrackWatch(parts.watches, []string{"a", "b", "c"}, cancel)
			defer done()
			next := &config.Config{Aggregation: &config.Aggregation{Clusters: tt.next}}
			endChangedWatches(old, next, parts, slog.New(slog.DiscardHandler))
			if got := ctx.Err() != nil; got != tt.ended {
				t.Errorf("watch ended: got %v, want %v", got, tt.ended)
			}
		})
	}
}
