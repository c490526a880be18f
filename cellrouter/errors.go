package cellrouter

import "errors"

var (
	// errJobTooLarge: a job answer above maxJobAnswer, which edge does not hold to ask controllers.
	errJobTooLarge = errors.New("the job answer is larger than 8 MiB; edge does not read it")
	// errNoUsableAddress: cell health has no address of the cell to send to.
	errNoUsableAddress = errors.New("no usable address")
)
