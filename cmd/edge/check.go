package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/server"
)

func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "check --config edge.yaml  |  edge check --agent --config agent.yaml", stderr)
	path := fs.String("config", "edge.yaml", "config file to validate (agent.yaml with --agent)")
	agent := fs.Bool("agent", false, "the config is an agent's (edge agent --config); its token file is read too")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *agent {
		configSet := false
		fs.Visit(func(f *flag.Flag) { configSet = configSet || f.Name == "config" })
		if !configSet {
			*path = "agent.yaml"
		}
		return checkAgent(*path, stdout)
	}
	cfg, err := server.LoadConfig(*path)
	if err != nil {
		return err
	}
	if err := server.Check(cfg); err != nil {
		return err
	}
	legacy, _ := cfg.LegacyCell()
	fmt.Fprintf(stdout, "%s: ok (%d cells, legacy cell %d)\n", *path, len(cfg.Cells), legacy.ID)
	return nil
}

// checkAgent validates an agent config as `edge agent --config` would before dialing: the file,
// then its token file.
func checkAgent(path string, stdout io.Writer) error {
	a, err := config.LoadAgent(path)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			return usageError{Err: fmt.Errorf("%d problem(s) in %s:\n%w", len(problems), path, problems)}
		}
		return usageError{Err: err}
	}
	if msg := tokenFileProblem(a.TokenFile); msg != "" {
		return usagef("%s: token_file: %s", path, msg)
	}
	fmt.Fprintf(stdout, "%s: ok (agent of %s, %d ports)\n", path, a.Edge, len(a.Upstreams))
	return nil
}
