package discovery

import "errors"

var (
	// ErrBadCells is wrapped by every NewCells validation error.
	ErrBadCells = errors.New("discovery: bad cells")
	// ErrBadClassifierOptions is wrapped by every NewClassifier validation error.
	ErrBadClassifierOptions = errors.New("discovery: bad classifier options")
	// ErrClassify is wrapped by every Classify error (transport, timeout, status, malformed answer).
	ErrClassify = errors.New("discovery: classify")
	// ErrBadHealthOptions is wrapped by every NewHealth validation error.
	ErrBadHealthOptions = errors.New("discovery: bad health options")
)
