//go:build unix

package bench

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a process group of its own, so that stopping it also stops its children
// (nginx's worker) and a terminal's Ctrl-C reaches only the bench command, which then stops
// everything in order.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	dieWithParent(cmd)
}

// signalGroup sends sig to the process group led by pid; a group already gone is no error.
func signalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal group %d: %w", pid, err)
	}
	return nil
}
