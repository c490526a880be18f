package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyDirection holds architecture.md's line: leaves import no project package but
// the small shared leaves under internal/ (themselves leaves), and certmagic stays in the TLS
// module (server).
func TestDependencyDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "gitlab.com/edge/edge/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "gitlab.com/edge/edge/"
	leaves := map[string]bool{"tokens": true, "discovery": true, "registry": true, "config": true, "tunnel": true, "workspaceauth": true, "aggregate": true, "sshproxy": true, "tracing": true, "admission": true, "h1": true, "moves": true, "internal/redirect": true, "internal/jsonspan": true, "internal/guard": true, "internal/redissub": true}
	shared := map[string]bool{"internal/redirect": true, "internal/jsonspan": true, "internal/guard": true, "internal/redissub": true}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var pkg struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&pkg); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(pkg.ImportPath, module)
		for _, imp := range pkg.Imports {
			if leaves[name] && strings.HasPrefix(imp, module) && !(shared[strings.TrimPrefix(imp, module)] && !shared[name]) {
				t.Errorf("leaf package %s imports %s", name, imp)
			}
			if strings.Contains(imp, "certmagic") && name != "server" {
				t.Errorf("%s imports certmagic; only server (its TLS module) may", name)
			}
			if name == "tokens" && imp == "net/http" {
				t.Errorf("tokens imports net/http")
			}
		}
	}
}

// TestLayers holds architecture.md's picture of the request path: each package imports only
// packages of layers below its own (the leaves, then hop, then the connection machinery and the
// front door, then the routers, then server), so nothing reaches up and there is no cycle.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "gitlab.com/edge/edge/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "gitlab.com/edge/edge/"
	layer := map[string]int{
		"hop": 1, "wire": 2, "front": 2, "engine": 2, "cellrouter": 3, "agentrouter": 3, "server": 4, "cmd/edge": 5,
	}
	for _, leaf := range []string{"tokens", "discovery", "registry", "config", "tunnel", "workspaceauth", "aggregate",
		"sshproxy", "tracing", "admission", "h1", "moves", "internal/redirect", "internal/jsonspan", "internal/guard", "internal/redissub", "internal/cli"} {
		layer[leaf] = 0
	}
	checked := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		name := strings.TrimPrefix(fields[0], module)
		own, ok := layer[name]
		if !ok || own == 0 {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			dep, project := strings.CutPrefix(imp, module)
			if !project {
				continue
			}
			if l, known := layer[dep]; !known || l >= own {
				t.Errorf("%s (layer %d) imports %s (layer %d, known %v)", name, own, dep, l, known)
			}
		}
	}
	if checked != 8 {
		t.Errorf("checked %d layered packages, want 8: a package moved or was renamed", checked)
	}
}
