package main

import (
	"flag"
	"io"
	"strings"

	"gitlab.com/edge/edge/internal/cli"
)

// newFlagSet makes a flag set whose errors are usage errors and whose --help exits 0.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	return cli.NewFlagSet("edge", name, synopsis, stderr)
}

func parseFlags(fs *flag.FlagSet, args []string) error { return cli.ParseFlags(fs, args) }

// isHelp tells whether arg asks for help, as the flag package understands it, for commands that
// take a subcommand before their flags.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// multiFlag collects a repeated flag such as -H.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
