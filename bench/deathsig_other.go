//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing here: only Linux has a parent-death signal, so a bench command
// killed with SIGKILL elsewhere leaves its children running.
func dieWithParent(*exec.Cmd) {}
