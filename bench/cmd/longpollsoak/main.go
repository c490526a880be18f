// Command longpollsoak is the long-poll soak of issue 11: it holds N `POST /api/v4/jobs/request`
// long polls (default 10,000) through one edge at a stand-in cell for the soak while other
// runner traffic runs, releases them with 204, and reports edge's memory, goroutines and CPU,
// and whether every poll was answered once (none lost, none retried, no 5xx of edge's own).
//
// It starts, on loopback: the cell (this binary again, hidden subcommand _cell), edge, and one
// or more client processes (_client). See bench/README.md, "Long polls: the soak".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case cellCommand:
			exitOn(runCell(os.Args[2:]))
		case clientCommand:
			exitOn(runClient(os.Stdin, os.Stdout))
		}
	}
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "longpollsoak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "longpollsoak:", err)
		if ctx.Err() != nil {
			code = 130
		}
	}
	stop()
	os.Exit(code)
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}
