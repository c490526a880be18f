package h1

import (
	"bufio"
	"io"
)

// ChunkedReader reads a chunked body: chunk sizes of 1 to 8 hex digits, each line ended by CRLF,
// no chunk extensions and no trailers. What net/http reads besides (extensions, trailers, longer
// sizes) is ErrChunked here: a refusal, never another reading.
type ChunkedReader struct {
	r   *bufio.Reader
	n   int64 // left of the chunk being read
	err error // sticky: io.EOF at the body's end
}

// NewChunkedReader reads the body that starts at r's next byte.
func NewChunkedReader(r *bufio.Reader) *ChunkedReader { return &ChunkedReader{r: r} }

func (c *ChunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.n == 0 {
		if c.err = c.begin(); c.err != nil {
			return 0, c.err // io.EOF at the body's end
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	if err != nil {
		c.err = unexpected(err)
		return n, c.err
	}
	if c.n == 0 {
		if c.err = c.crlf(); c.err != nil {
			return n, c.err
		}
	}
	return n, nil
}

// begin reads a chunk-size line; the last chunk's reads the empty line after it too.
func (c *ChunkedReader) begin() error {
	// The whole line first, as net/http reads it: a line the body's end cuts short is an
	// unexpected EOF whatever it holds.
	line, err := c.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return ErrChunked
	case err != nil:
		return unexpected(err)
	}
	digits := line[:len(line)-1]
	if len(digits) < 2 || digits[len(digits)-1] != '\r' {
		return ErrChunked
	}
	digits = digits[:len(digits)-1]
	if len(digits) == 0 || len(digits) > 8 {
		return ErrChunked
	}
	var size int64
	for _, b := range digits {
		v, ok := hexValue(b)
		if !ok {
			return ErrChunked
		}
		size = size<<4 | int64(v)
	}
	if size > 0 {
		c.n = size
		return nil
	}
	if err := c.crlf(); err != nil {
		// A trailer, anything else after the last chunk, or the end cut short there (net/http
		// fails that one too, though not as an unexpected EOF).
		return ErrChunked
	}
	return io.EOF
}

// crlf reads the CRLF that ends a chunk's data (or the body).
func (c *ChunkedReader) crlf() error {
	cr, err := c.r.ReadByte()
	if err != nil {
		return unexpected(err)
	}
	lf, err := c.r.ReadByte()
	if err != nil {
		return unexpected(err)
	}
	if cr != '\r' || lf != '\n' {
		return ErrChunked
	}
	return nil
}

func hexValue(b byte) (byte, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
