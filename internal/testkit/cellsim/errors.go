package cellsim

import "errors"

// ErrJobExists: AddJobWithID was given the id of a job the cell already has.
var ErrJobExists = errors.New("job id already exists")

// ErrNoJob: the cell has no job with that id.
var ErrNoJob = errors.New("no such job")
