package guard

import "errors"

// ErrCrashed is the error of a call whose panic Call contained.
var ErrCrashed = errors.New("crashed (panic contained; see the log)")
