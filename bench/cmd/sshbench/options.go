package main

import (
	"errors"
	"flag"
	"io"
)

// options are the command's flags.
type options struct {
	sizeMiB int // -size: the file scp copies each way
	rounds  int
	n       int // -n: `ssh ... true` runs each way per round
	keep    bool
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("sshbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.sizeMiB, "size", 256, "size of the file scp copies each way, MiB")
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds")
	fs.IntVar(&o.n, "n", 10, "ssh ... true runs each way per round (latency)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (configs, keys, logs)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.sizeMiB < 1 || o.rounds < 1 || o.n < 1 || fs.NArg() > 0 {
		fs.Usage()
		return o, errors.New("-size, -rounds and -n must be at least 1, and there are no arguments")
	}
	return o, nil
}
