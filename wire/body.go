package wire

import (
	"bytes"
	"io"
)

// MemoryBody is a request body that may be held whole in memory: the inline transport takes such
// a request and writes the body with its head, never waiting on the client.
type MemoryBody interface {
	io.ReadCloser
	// Whole is the body from its start when it is wholly in memory, else nil.
	Whole() *bytes.Reader
}

// JobsRequestPath is the job queue's long poll: a request to it that reached the cell may have
// claimed a job, so it is never sent twice.
const JobsRequestPath = "/api/v4/jobs/request"
