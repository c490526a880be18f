package main

import (
	"fmt"
	"io"

	"gitlab.com/edge/edge/server"
)

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "version", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	b := server.ReadBuildInfo()
	fmt.Fprintf(stdout, "edge %s\ncommit %s\n%s\n", b.Version, b.Commit, b.GoVersion)
	return nil
}
