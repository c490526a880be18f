package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"gitlab.com/edge/edge/server"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve --config edge.yaml [--advertise-internal URL]", stderr)
	path := fs.String("config", "edge.yaml", "config file")
	advertise := fs.String("advertise-internal", "", "overrides listen.advertise_internal, e.g. http://$(POD_IP):8081 in a Kubernetes pod spec")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// SIGHUP reloads the config; caught before anything else, as its default action would end
	// the process, and until Serve has returned (through the drain).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	opts := server.Options{Path: *path, AdvertiseInternal: *advertise, Build: server.ReadBuildInfo(), Log: stderr, Reload: hup}
	cfg, err := opts.Load()
	if err != nil {
		return err
	}
	return server.Serve(ctx, cfg, opts)
}
