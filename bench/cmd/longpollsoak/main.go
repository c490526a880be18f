// Command longpollsoak is the long-poll soak of issue 11: it holds N `POST /api/v4/jobs/request`
// long polls (default 10,000) through one edge at a stand-in cell for the soak while other
// runner traffic runs, releases them with 204, and reports edge's memory, goroutines and CPU,
// and whether every poll was answered once (none lost, none retried, no 5xx of edge's own).
//
// It starts, on loopback: the cell (this binary again, hidden subcommand _cell), edge, and one
// or more client processes (_client). See bench/README.md, "Long polls: the soak".
package main

import (
	"fmt"
	"os"

	"gitlab.com/edge/edge/bench"
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
	bench.Main("longpollsoak", parseOptions, run)
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}
