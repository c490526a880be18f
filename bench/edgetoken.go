package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// EdgeToken runs `edge token mint KIND ARGS...` with the edge binary and returns the token.
func EdgeToken(ctx context.Context, edgeBin, kind string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, edgeBin, append([]string{"token", "mint", kind}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("edge token mint %s: %w: %s", kind, err, strings.TrimSpace(stderr.String()))
	}
	tok := strings.TrimSpace(string(out))
	if tok == "" || strings.ContainsAny(tok, " \n") {
		return "", fmt.Errorf("edge token mint %s: not one token on its output", kind)
	}
	return tok, nil
}
