package server

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"gitlab.com/edge/edge/config"
)

func TestAdvertiseInternalFlagOverridesConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Listen.AdvertiseInternal = "http://from-file:8081"
	Options{}.override(cfg)
	if cfg.Listen.AdvertiseInternal != "http://from-file:8081" {
		t.Errorf("no flag: got %q", cfg.Listen.AdvertiseInternal)
	}
	Options{AdvertiseInternal: "http://10.1.2.3:8081"}.override(cfg)
	if cfg.Listen.AdvertiseInternal != "http://10.1.2.3:8081" {
		t.Errorf("flag: got %q", cfg.Listen.AdvertiseInternal)
	}
}

// TestStageOrder holds the order a drain depends on: the ops listener is first up and last down,
// the traffic listeners start after the registry and tunnels they need, readiness stops (503)
// before the registry drain, and the reload watcher stops first.
func TestStageOrder(t *testing.T) {
	e := buildFile(t, "../examples/workspaces.yaml")
	var names []string
	for _, s := range ordered(e.modules, nil, slog.New(slog.DiscardHandler), nil) {
		names = append(names, s.name)
	}
	want := []string{"ops listener", "access log", "cell health", "redis", "registry", "tunnels", "workspace authorizer",
		"listeners", "registry drain", "ready", "reload"}
	if !slices.Equal(names, want) {
		t.Errorf("stages:\n got %s\nwant %s", strings.Join(names, ", "), strings.Join(want, ", "))
	}
}
