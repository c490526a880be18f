package server

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/config"
)

// buildFile builds every module of a config file, as Check does.
func buildFile(t *testing.T, path string) *edge {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := build(cfg, Options{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return e
}
