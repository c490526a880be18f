package moves

import "errors"

var (
	ErrBadMove     = errors.New("moves: bad move")
	ErrBadPhase    = errors.New("moves: bad phase")
	ErrUnknownCell = errors.New("moves: unknown cell")
	ErrBackwards   = errors.New("moves: phase goes backwards")
	ErrNotFound    = errors.New("moves: no move for this organization")
)
