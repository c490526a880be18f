package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FindTool looks in PATH and then in the sbin directories a non-login shell's PATH may lack;
// "" when the program is nowhere.
func FindTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// ToolCommand is a short-lived program a bench command waits for (a load generator, perf): it
// ends with ctx, and with the bench command even when that is killed.
func ToolCommand(ctx context.Context, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	dieWithParent(cmd)
	return cmd
}

// RunTool runs argv to its end and returns its output, stdout and stderr together. An ended ctx
// is the error then, not the killed program's exit status.
func RunTool(ctx context.Context, argv []string) (string, error) {
	out, err := ToolCommand(ctx, argv).CombinedOutput()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}

// Pinner prefixes a server's or a load generator's argv with taskset, so that the two do not
// compete for one CPU; with On false it leaves argv alone.
type Pinner struct {
	Taskset string // the taskset program
	On      bool
}

// Pin runs argv on cpu.
func (p Pinner) Pin(cpu int, argv ...string) []string {
	if !p.On {
		return argv
	}
	return append([]string{p.Taskset, "-c", fmt.Sprint(cpu)}, argv...)
}
