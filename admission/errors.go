package admission

import "errors"

var (
	// errCrashed is the failure of a call that panicked (contained): the controller failed.
	errCrashed = errors.New("admission: the call crashed (a contained panic)")
	// ErrJobCall is a call to the cell that failing a job could not make.
	ErrJobCall = errors.New("admission: failing the job at its cell")
	// ErrNotAJob is a 201 answer that does not read as a job.
	ErrNotAJob = errors.New("admission: the answer is not a job")
)
