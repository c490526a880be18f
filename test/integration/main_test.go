// Package integration runs the edge binary against fake GitLab cells (internal/testkit/cellsim) on
// loopback and checks, request by request, that runner traffic reaches the cell its token names
// with its bytes intact.
//
// Run with `go test ./test/integration/` from the repository root (about 50 s on 2 cores; the
// two 30 s long-poll tests run in parallel with the rest). TestMain builds ./cmd/edge and the
// demo, ./cmd/edge-demo, once.
// The agent tunnel tests (tunnel_*_test.go) also run redis-server, which `make deps` installs.
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMain builds the edge binary and the demo once for every test.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	raiseFileLimit()
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	bin := edgeBinaryPath()
	defer os.RemoveAll(filepath.Dir(bin))
	// Into the directory (the trailing slash): edge and edge-demo, which finds edge next to it.
	build := exec.Command("go", "build", "-o", filepath.Dir(bin)+string(filepath.Separator), "./cmd/edge", "./cmd/edge-demo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: go build ./cmd/edge ./cmd/edge-demo: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// edgeBinaryPath is where TestMain builds edge: a directory of this test process.
func edgeBinaryPath() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("edge-integration-%d", os.Getpid()), "edge")
}

// demoBinaryPath is where TestMain builds the demo: next to edge, which it runs.
func demoBinaryPath() string {
	return filepath.Join(filepath.Dir(edgeBinaryPath()), "edge-demo")
}

// repoRoot is the module root: two levels up from this package.
func repoRoot() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", fmt.Errorf("repo root: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("repo root %s: %w", root, err)
	}
	return root, nil
}

// raiseFileLimit lifts the soft open-file limit to the hard one: the long-poll tests hold
// thousands of connections in this process and in edge (which inherits the limit).
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}
