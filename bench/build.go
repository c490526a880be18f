package bench

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
)

// GoBuild builds a package of the repository (the working directory) into dir/name.
func GoBuild(ctx context.Context, dir, pkg, name string) (string, error) {
	return GoBuildIn(ctx, "", dir, pkg, name)
}

// GoBuildIn is GoBuild from the repository at repo ("": the working directory).
func GoBuildIn(ctx context.Context, repo, dir, pkg, name string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, strings.TrimSpace(string(b)))
	}
	return out, nil
}

// FreeAddr asks the kernel for a free port on host. Another process could take it before the
// server binds it; the server then fails to start and the benchmark says so.
func FreeAddr(host string) (string, error) {
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		return "", fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
