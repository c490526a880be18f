package bench

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

// Main is a bench command's main: parse its flags (exit 0 on -h, 2 on a bad flag), run until
// done or interrupted, and exit with run's code (130 when interrupted with an error).
func Main[O any](name string, parse func(args []string, stderr io.Writer) (O, error), run func(ctx context.Context, o O, stdout io.Writer) (int, error)) {
	o, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		if ctx.Err() != nil {
			code = 130
		}
	}
	stop()
	os.Exit(code)
}
