package cellsim

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Record is what the cell saw of one request and what it answered.
type Record struct {
	Cell   uint64
	Route  string // one of the Route constants
	Method string
	Path   string
	Query  string

	// TokenSource is where the token the cell authenticated came from: "RUNNER-TOKEN",
	// "JOB-TOKEN", "PRIVATE-TOKEN", "Authorization", "body", "query" or "" (none).
	TokenSource string
	Token       string
	BodyToken   string // the body's token field, when the body has one
	LastUpdate  string // jobs/request: the body's last_update

	// The body as received: its length, sha256 (hex) and how it was framed.
	BodyLen          int64
	BodySHA256       string
	ContentLength    int64 // -1 when unknown (chunked)
	TransferEncoding []string
	// Header is the request's header as received, with token values replaced by "[redacted]".
	Header http.Header

	Status     int
	Authorized bool
	// Misrouted: the request does not belong here (its token names another cell, a token naming
	// no cell reached a cell that is not legacy, or the job in the path is not this cell's).
	Misrouted bool
	// Canceled: the request's context ended before the cell answered (the client or the proxy
	// in front went away).
	Canceled bool
	Held     time.Duration // how long a job request was held in the long poll
	JobID    uint64        // the job in the path, or the job a 201 job request handed out
	// FileSHA256 and FileSize describe the multipart "file" part of an artifact upload.
	FileSHA256 string
	FileSize   int64
	BodyErr    string // reading the body failed (e.g. the client went away)
}

// String describes the record without any token value.
func (r Record) String() string {
	return fmt.Sprintf("cell %d: %s %s -> %d (token from %q, %d bytes, authorized=%v misrouted=%v canceled=%v)",
		r.Cell, r.Method, r.Path, r.Status, r.TokenSource, r.BodyLen, r.Authorized, r.Misrouted, r.Canceled)
}

// Records returns a copy of every record so far, oldest first.
func (c *Cell) Records() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), c.records...)
}

// Count is how many records match.
func (c *Cell) Count(match func(Record) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.records {
		if match(r) {
			n++
		}
	}
	return n
}

// Wait returns the first record that matches, waiting for one until ctx ends.
func (c *Cell) Wait(ctx context.Context, match func(Record) bool) (Record, error) {
	seen := 0
	for {
		c.mu.Lock()
		for ; seen < len(c.records); seen++ {
			if match(c.records[seen]) {
				r := c.records[seen]
				c.mu.Unlock()
				return r, nil
			}
		}
		added := c.recordsAdded
		c.mu.Unlock()
		select {
		case <-added:
		case <-ctx.Done():
			return Record{}, fmt.Errorf("cellsim: cell %d: waiting for a record: %w", c.opts.CellID, ctx.Err())
		}
	}
}

func (c *Cell) addRecord(r Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r)
	close(c.recordsAdded)
	c.recordsAdded = make(chan struct{})
}
