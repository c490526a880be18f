package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/cli"
)

// TestExamplesPassCheck keeps every example config valid as the config grows (agent.yaml is
// the agent's own config).
func TestExamplesPassCheck(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configs found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if filepath.Base(f) == "agent.yaml" {
				if _, err := config.LoadAgent(f); err != nil {
					t.Errorf("agent config %s: %v", f, err)
				}
				return
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"check", "--config", f}, strings.NewReader(""), &stdout, &stderr)
			if err != nil || !strings.Contains(stdout.String(), ": ok") {
				t.Errorf("edge check %s: %v\n%s%s", f, err, stdout.String(), stderr.String())
			}
		})
	}
}

func TestCheckRefusesBadConfigWithExit2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "listen: {publik: ':1'}\ncells: []\n")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"check", "--config", bad}, strings.NewReader(""), &stdout, &stderr)
	if code := cli.ExitCode("edge", err, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2 (%v)", code, err)
	}
	for _, want := range []string{"bad.yaml:1: listen.publik", "bad.yaml:2: cells: no cells"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems %q lack %q", err, want)
		}
	}
}

func TestExplainAgentProxyPath(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"explain", "--config", "../../examples/agents.yaml",
		"http://edge/-/api/v1/agents/a1/connections/c9/proxy/3000/ws"}, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{`"traffic": "gitlab_api"`, `"agent_id": "a1"`, `"connection_id": "c9"`, `"port": "3000"`, `"upstream_path": "/ws"`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("explain output lacks %s:\n%s", want, stdout.String())
		}
	}
}
