//go:build !unix

package main

import "errors"

// raiseFileLimit fails here: the soak needs more descriptors than a default limit allows, and
// only Unix has RLIMIT_NOFILE to raise.
func raiseFileLimit() (uint64, error) {
	return 0, errors.New("raising the open-file limit needs a Unix system")
}
