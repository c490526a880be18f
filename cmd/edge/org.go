package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/server"
)

// cmdOrg makes, lists and forgets organization moves in the fleet's store (registry.redis), as
// GitLab's migration tooling does through the API for GitLab.
func cmdOrg(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("edge org move|list|forget --config edge.yaml ...")
	}
	sub, rest := args[0], args[1:]
	fs := newFlagSet("org "+sub, "org move --config edge.yaml --org N --cell M --phase freeze|switched  |  org list --config edge.yaml  |  org forget --config edge.yaml --org N", stderr)
	path := fs.String("config", "edge.yaml", "the edge config whose registry.redis keeps the moves")
	org := fs.Uint64("org", 0, "organization id")
	cell := fs.Uint64("cell", 0, "the cell the organization moves to")
	phase := fs.String("phase", "", "freeze (its data is copied: no job claimed for it) or switched (it lives in --cell)")
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	cfg, err := server.LoadConfig(*path)
	if err != nil {
		return err
	}
	table, closeStore, err := server.OpenOrgMoves(cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	enc := json.NewEncoder(stdout)
	switch sub {
	case "move":
		p, err := moves.ParsePhase(*phase)
		if err != nil {
			return usageError{Err: err}
		}
		m, err := table.Set(ctx, *org, *cell, p, server.KnownCells(cfg))
		if err != nil {
			return orgError(err)
		}
		return enc.Encode(m)
	case "list":
		if err := table.Resync(ctx); err != nil {
			return err
		}
		return enc.Encode(struct {
			Moves []moves.Move `json:"moves"`
		}{table.All()})
	case "forget":
		if err := table.Forget(ctx, *org); err != nil {
			return orgError(err)
		}
		fmt.Fprintf(stdout, "organization %d: move forgotten\n", *org)
		return nil
	}
	return usagef("unknown org command %q (move, list, forget)", sub)
}

// orgError makes a refused move a usage error (exit 2), as the API answers it 4xx.
func orgError(err error) error {
	for _, refused := range []error{moves.ErrBadMove, moves.ErrBadPhase, moves.ErrUnknownCell, moves.ErrBackwards, moves.ErrNotFound} {
		if errors.Is(err, refused) {
			return usageError{Err: err}
		}
	}
	return err
}
