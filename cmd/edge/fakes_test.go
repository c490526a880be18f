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
	for _, want := range []string{"gitlab.com/edge/edge/internal/testkit/cellsim", "github.com/zitadel/oidc/v3/example/server/exampleop"} {
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
	// The demo's and the tests' support: fake cells, identity providers, browsers and networks
	// (all of internal/testkit), the registry's contract suite, and zitadel's example OpenID
	// provider and storage: cmd/edge-demo links some of them, operators deploy ./cmd/edge.
	fakes := []string{
		"gitlab.com/edge/edge/internal/testkit",
		"gitlab.com/edge/edge/registry/registrytest",
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
