// Command chaossoak is the chaos soak: three edges sharing a Redis registry in front of three
// fake cells (bench/cmd/soakcell), two agents, 20 runner loops and workspace-like traffic through
// the API for GitLab, while a fault script kills -9 and restarts an edge, Redis, a cell or an
// agent at random intervals. At the end it checks that every job handed out was claimed once and
// finished (the cells keep a ledger that survives their restarts), that edge made 5xx only inside
// the fault windows, and that the edges never killed went back near their baseline memory and
// goroutines. See bench/README.md, "Chaos soak".
package main

import "gitlab.com/edge/edge/bench"

func main() {
	bench.Main("chaossoak", parseOptions, run)
}
