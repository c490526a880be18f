// Command edge is the edge router: one binary for the router and its tools. The demo (make demo,
// cmd/edge-demo) runs this binary but lives apart, so that it links none of the demo's fakes.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"gitlab.com/edge/edge/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode("edge", err, os.Stderr))
}

type usageError = cli.UsageError

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

const usageText = `edge: the front door of a platform split into cells.

Usage:
  edge serve   --config edge.yaml       run the router
  edge agent   --config agent.yaml | --edge URL --token-file F --allow-port N...
                                        run an agent: dial the edge, serve local upstreams
  edge check   --config edge.yaml       validate a config; list every problem
  edge check   --agent --config agent.yaml
                                        validate an agent config and its token file
  edge explain --config edge.yaml [-X METHOD] [-H 'K: V']... [-d BODY] URL
                                        print the routing decision for one request
  edge token mint routable|job|agent|gitlab-api ...
                                        mint tokens for tests and tooling
  edge token decode TOKEN|-             print a token's routing keys
  edge org move   --config edge.yaml --org N --cell M --phase freeze|switched
  edge org list   --config edge.yaml    the organization moves in force (registry.redis)
  edge org forget --config edge.yaml --org N
  edge version (or edge --version)      print version, commit and Go version

Run 'edge COMMAND --help' for a command's flags.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(ctx, rest, stdout, stderr)
	case "agent":
		return cmdAgent(ctx, rest, stdout, stderr)
	case "check":
		return cmdCheck(rest, stdout, stderr)
	case "explain":
		return cmdExplain(ctx, rest, stdout, stderr)
	case "token":
		return cmdToken(rest, stdin, stdout, stderr)
	case "org":
		return cmdOrg(ctx, rest, stdout, stderr)
	case "demo":
		return usagef("the demo is not part of the router binary: run 'make demo' in the source tree (cmd/edge-demo)")
	case "version", "-v", "-version", "--version":
		return cmdVersion(rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return nil
	}
	fmt.Fprint(stderr, usageText)
	return usagef("unknown command %q", cmd)
}
