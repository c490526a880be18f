// Command edge-demo is the demo of `make demo`: the edge binary (`edge serve`) on loopback in
// front of two fake cells (internal/cellsim), with an agent, a workspace behind a development
// login (internal/devlogin) and, when OpenSSH's sshd is installed, SSH into it. It lives apart
// from cmd/edge so that the router binary operators deploy links none of these fakes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := cmdDemo(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is bad usage: exit 2, as for edge.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errHelp means --help was asked for and printed: exit 0.
var errHelp = errors.New("help printed")

func exitCode(err error, stderr io.Writer) int {
	var usage usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "edge-demo:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "edge-demo:", err)
		return 1
	}
}

// newFlagSet makes a flag set whose errors are usage errors and whose --help exits 0.
func newFlagSet(synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("edge-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edge-demo %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
