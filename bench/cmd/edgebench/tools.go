package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"gitlab.com/edge/edge/bench"
)

// tools are the external programs the harness runs.
type tools struct {
	nginx, wrk string
	redis      string // empty unless the cases need it (the hop's shared registry)
	haproxy    string // empty unless the haproxy case runs
	caddy      string // empty unless the caddy case runs; built, not installed (findCaddy)
	taskset    string // empty: no pinning
	perf       string // empty: no profiling
}

// wantedTool is a program the harness runs, the Debian package that has it, and where its path
// goes in tools.
type wantedTool struct {
	name, pkg string
	path      *string
}

// ensureTools finds nginx, wrk, and what the selected cases add (redis-server for the hop,
// haproxy), installing them with apt-get when they are missing and the harness runs as root on
// Debian (as on CI), and finds taskset and perf if they are there.
func ensureTools(ctx context.Context, noInstall bool, ids []string) (tools, error) {
	t := tools{taskset: bench.FindTool("taskset"), perf: bench.FindTool("perf")}
	wanted := []wantedTool{{"nginx", "nginx-light", &t.nginx}, {"wrk", "wrk", &t.wrk}}
	if needsSecondEdge(ids) {
		wanted = append(wanted, wantedTool{"redis-server", "redis-server", &t.redis})
	}
	if slices.Contains(ids, caseHAProxy) {
		wanted = append(wanted, wantedTool{"haproxy", "haproxy", &t.haproxy})
	}
	var missing []string
	for _, w := range wanted {
		if *w.path = bench.FindTool(w.name); *w.path == "" {
			missing = append(missing, w.pkg)
		}
	}
	if len(missing) == 0 {
		return t, nil
	}
	if noInstall || os.Geteuid() != 0 || !fileExists("/etc/debian_version") || bench.FindTool("apt-get") == "" {
		return t, fmt.Errorf("missing %s: install them (apt-get install -y %s) or run edgebench as root on Debian",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	logf("installing %s with apt-get", strings.Join(missing, " "))
	if err := aptInstall(ctx, missing); err != nil {
		return t, err
	}
	for _, w := range wanted {
		if *w.path = bench.FindTool(w.name); *w.path == "" {
			return t, fmt.Errorf("%s still missing after apt-get install %s", w.name, w.pkg)
		}
	}
	return t, nil
}

// aptInstall installs pkgs without letting their maintainer scripts start a system nginx on
// port 80, a system haproxy or a system redis: processes the harness would have started and not
// stopped. Debian's policy-rc.d hook (exit 101: "action forbidden") is the documented way; an
// existing one is left alone.
func aptInstall(ctx context.Context, pkgs []string) error {
	const policy = "/usr/sbin/policy-rc.d"
	if !fileExists(policy) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", policy, err)
		}
		defer os.Remove(policy)
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{
		{"apt-get", "update", "-qq"},
		append([]string{"apt-get", "install", "-y", "-qq", "--no-install-recommends"}, pkgs...),
	} {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
