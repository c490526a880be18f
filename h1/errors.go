package h1

import "errors"

// ErrChunked is a chunked body outside the engine's subset or broken: the request fails, as
// net/http fails one whose body it cannot read.
var ErrChunked = errors.New("h1: malformed chunked body")
