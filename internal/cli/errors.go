package cli

import "errors"

var (
	// ErrHelp means --help was asked for and printed: exit 0.
	ErrHelp = errors.New("help printed")
)
