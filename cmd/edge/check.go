package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "check --config edge.yaml", stderr)
	path := fs.String("config", "edge.yaml", "config file to validate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	if _, err := buildRouter(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry()); err != nil {
		return err
	}
	legacy, _ := cfg.LegacyCell()
	fmt.Fprintf(stdout, "%s: ok (%d cells, legacy cell %d)\n", *path, len(cfg.Cells), legacy.ID)
	return nil
}
