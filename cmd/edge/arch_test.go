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
	leaves := map[string]bool{"tokens": true, "discovery": true, "registry": true, "config": true, "tunnel": true, "workspaceauth": true, "aggregate": true, "sshproxy": true, "tracing": true, "admission": true, "internal/redirect": true, "internal/jsonspan": true, "internal/guard": true}
	shared := map[string]bool{"internal/redirect": true, "internal/jsonspan": true, "internal/guard": true}
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
