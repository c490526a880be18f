// Command edge-demo is the demo of `make demo`: the edge binary (`edge serve`) on loopback in
// front of two fake cells (internal/testkit/cellsim), with an agent, a workspace behind a development
// login (internal/testkit/devlogin) and, when OpenSSH's sshd is installed, SSH into it. It lives apart
// from cmd/edge so that the router binary operators deploy links none of these fakes.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"gitlab.com/edge/edge/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := cmdDemo(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode("edge-demo", err, os.Stderr))
}

type usageError = cli.UsageError

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// newFlagSet makes a flag set whose errors are usage errors and whose --help exits 0.
func newFlagSet(synopsis string, stderr io.Writer) *flag.FlagSet {
	return cli.NewFlagSet("edge-demo", "edge-demo", synopsis, stderr)
}

// parseFlags parses args and refuses arguments after the flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
