//go:build !unix

package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// ownGroup does nothing here: without process groups a child's own children outlive a stop.
func ownGroup(cmd *exec.Cmd) { dieWithParent(cmd) }

// signalGroup can only kill the process itself here; every signal ends it, since there is no
// portable way to ask it to stop.
func signalGroup(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil // gone already
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	return nil
}
