// Package cli is what edge's commands share on the command line: flag sets whose errors are
// usage errors, --help that exits 0, and the exit codes of contract.md (0, 1, 2 for bad usage
// or a bad config).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError is bad usage or a bad config: exit 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// ExitCode is the exit code of err, printed to stderr after the program's name when it is one.
func ExitCode(prog string, err error, stderr io.Writer) int {
	var usage UsageError
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, prog+":", err)
		return 2
	default:
		fmt.Fprintln(stderr, prog+":", err)
		return 1
	}
}

// NewFlagSet makes a flag set for `prog synopsis` whose errors are usage errors and whose --help
// exits 0 (with ParseFlags).
func NewFlagSet(prog, name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s\n\nFlags:\n", prog, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// ParseFlags parses args: --help is ErrHelp, any other error a UsageError.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
		return UsageError{err}
	}
	return nil
}
