package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel SIGKILL cmd when the bench command dies, even of SIGKILL itself,
// which no deferred StopAll survives.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
