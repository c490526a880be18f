package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"gitlab.com/edge/edge/internal/cli"
)

// Without registry.redis there is no fleet store for edge org to write: it says so, and where
// moves are made instead, with a usage error.
func TestOrgWithoutRegistry(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "edge.yaml")
	writeFile(t, conf, "cells:\n  - {id: 1, url: \"http://127.0.0.1:9\", legacy: true}\n")
	for _, args := range [][]string{{"org", "list", "--config", conf}, {"org", "move", "--config", conf, "--org", "7", "--cell", "1", "--phase", "freeze"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		var usage cli.UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "registry is not set") || !strings.Contains(err.Error(), "/-/api/v1/organizations/") {
			t.Errorf("%v: %v, want a usage error naming the API", args, err)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"org"}, strings.NewReader(""), &stdout, &stderr); err == nil {
		t.Error("edge org with no subcommand: no error")
	}
}
