//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// raiseFileLimit lifts the soft RLIMIT_NOFILE to the hard one and returns the hard one. Calling
// Setrlimit even when they are equal matters: Go raises its own soft limit at start but hands
// exec'd children the original one unless the program set the limit itself.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("getrlimit NOFILE: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("setrlimit NOFILE to %d: %w", lim.Max, err)
	}
	return lim.Max, nil
}
