package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestRouterLinksNoTestFake: go list -deps ./cmd/edge names no test fake. The same check on the
// demo command must find some, or the list in linkedFakes has gone stale.
func TestRouterLinksNoTestFake(t *testing.T) {
	if got := linkedFakes(t, "gitlab.com/edge/edge/cmd/edge"); len(got) > 0 {
		t.Errorf("./cmd/edge links test fakes (move what needs them to cmd/edge-demo): %s", strings.Join(got, ", "))
	}
	got := linkedFakes(t, "gitlab.com/edge/edge/cmd/edge-demo")
	for _, want := range []string{"gitlab.com/edge/edge/internal/cellsim", "github.com/zitadel/oidc/v3/example/server/exampleop"} {
		if !slices.Contains(got, want) {
			t.Errorf("./cmd/edge-demo does not link %s: is the check still looking at the right names? it found %v", want, got)
		}
	}
}

// linkedFakes lists the packages pkg links (go list -deps) that are, or are under, a test fake.
func linkedFakes(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	// The demo's and the tests' fake cells, identity providers, browsers and networks, and
	// zitadel's example OpenID provider and storage: cmd/edge-demo links them, operators deploy
	// ./cmd/edge.
	fakes := []string{
		"gitlab.com/edge/edge/internal/cellsim",
		"gitlab.com/edge/edge/internal/devlogin",
		"gitlab.com/edge/edge/internal/oidctest",
		"gitlab.com/edge/edge/internal/browsertest",
		"gitlab.com/edge/edge/internal/testnet",
		"github.com/zitadel/oidc/v3/example",
	}
	var found []string
	for dep := range strings.FieldsSeq(string(out)) {
		for _, fake := range fakes {
			if dep == fake || strings.HasPrefix(dep, fake+"/") {
				found = append(found, dep)
			}
		}
	}
	return found
}
