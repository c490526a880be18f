package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"time"
)

const (
	// cutHeld is how long a job request must have been held at the cell for its answer to be
	// cut: edge parks a poll the cell holds more than 50 ms, so this one is parked.
	cutHeld = 200 * time.Millisecond
	// cutWait bounds the wait for a job to be handed out to a held poll; after it the cell is
	// killed -9 instead and the fault says so.
	cutWait = 30 * time.Second
	// cellExitCut is soakcell's exit status after a cut (its exitCut).
	cellExitCut = 3
)

// cutAnswer is a cell-mid-answer's stop: cell i is asked (POST /cut on its control listener) to
// cut its next 201 handing out a job to a poll held cutHeld mid-body and exit, and the soak waits
// for it to exit. A cell that hands no job out within cutWait is killed -9, and the fault's
// error says so.
func (s *soak) cutAnswer(ctx context.Context, f *fault, i int) error {
	c := s.c
	cs := c.cells[i]
	p, undo := c.expectExit(&cs.slot, endCut)
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(actx, http.MethodPost, "http://"+cs.control+"/cut",
		strings.NewReader(fmt.Sprintf(`{"held_ms":%d}`, cutHeld.Milliseconds())))
	resp, err := c.http.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("POST /cut: %s", resp.Status)
		}
	}
	if err != nil {
		undo()
		return fmt.Errorf("%s: %w", cs.name, err)
	}
	armed := time.Now()
	select {
	case <-p.Done():
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cutWait):
		s.faults.update(f, func(f *fault) {
			f.Err = fmt.Sprintf("no job handed out to a held poll within %s: killed -9 instead", cutWait)
		})
		return c.kill(&cs.slot)
	}
	var ee *exec.ExitError
	if err := p.Err(); !errors.As(err, &ee) || ee.ExitCode() != cellExitCut {
		undo() // an exit the cell was not asked for: the judge counts it as one
		s.faults.update(f, func(f *fault) { f.Err = fmt.Sprintf("%s exited (%v), not after a cut", cs.name, err) })
		return nil
	}
	s.faults.update(f, func(f *fault) {
		f.Note = fmt.Sprintf("cut and exited %.1f s after the order", time.Since(armed).Seconds())
	})
	return nil
}
