package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// scpResult is one scp's times.
type scpResult struct {
	wall time.Duration // the scp process, its login included
	// data is the data phase: from the first time the destination file was seen with bytes in
	// it to the first time it was seen whole; dataBytes is what it grew by in that time.
	data      time.Duration
	dataBytes int64
	cpu       time.Duration // scp and the ssh it runs
}

// scp copies from to to (an argument "REMOTE:path" is user@127.0.0.1:path; both ends are on this
// machine) and watches dest, which is to be size bytes, grow.
func (c *client) scp(ctx context.Context, from, to, dest string, size int64) (scpResult, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	args := append([]string{"-q", "-P", strconv.Itoa(c.port)}, c.options()...)
	for _, a := range []string{from, to} {
		if rest, ok := strings.CutPrefix(a, "REMOTE:"); ok {
			a = c.user + "@127.0.0.1:" + rest
		}
		args = append(args, a)
	}
	cmd := exec.CommandContext(ctx, "scp", args...)
	cmd.Env = c.env()
	cmd.WaitDelay = 5 * time.Second
	done := make(chan struct{})
	watched := make(chan scpResult, 1)
	go func() {
		// A stat every millisecond: a few microseconds of CPU each.
		var r scpResult
		var first, whole time.Time
		var firstSize int64
		for {
			select {
			case <-done:
				if whole.IsZero() {
					whole = time.Now()
				}
				if !first.IsZero() {
					r.data, r.dataBytes = whole.Sub(first), size-firstSize
				}
				watched <- r
				return
			default:
			}
			if fi, err := os.Stat(dest); err == nil && fi.Size() > 0 {
				now := time.Now()
				if first.IsZero() {
					first, firstSize = now, fi.Size()
				}
				if whole.IsZero() && fi.Size() >= size {
					whole = now
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	close(done)
	r := <-watched
	if err != nil {
		return r, string(out), err
	}
	r.wall = wall
	// wait4's rusage counts scp and its waited-for children (the ssh it runs).
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if r.data <= 0 || r.dataBytes < size/2 {
		return r, string(out), fmt.Errorf("the data phase was not seen (%v, %d bytes): a file too small for the watch", r.data, r.dataBytes)
	}
	return r, string(out), nil
}
