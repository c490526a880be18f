package main

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

// kill sends SIGKILL to the slot's process and waits for it to exit.
func (c *cluster) kill(s *slot) error {
	c.mu.Lock()
	p := s.proc
	s.kills++
	s.down = true
	if run := s.runs[len(s.runs)-1]; !p.Exited() {
		run.ended = endKill // one that exited before stays an exit unasked
	}
	c.mu.Unlock()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.Done():
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not exit 10 s after SIGKILL", p.Name)
	}
}

func (c *cluster) up(s *slot) {
	c.mu.Lock()
	s.down = false
	c.mu.Unlock()
}

// slots are every process slot.
func (c *cluster) slots() []*slot {
	out := []*slot{c.redis}
	for _, cs := range c.cells {
		out = append(out, &cs.slot)
	}
	for _, es := range c.edges {
		out = append(out, &es.slot)
	}
	for _, as := range c.agents {
		out = append(out, &as.slot)
	}
	return out
}

// expectExit notes that the slot's process is about to exit because the fault script asks it to
// (how), and returns it; undo takes that back when the asking failed.
func (c *cluster) expectExit(s *slot, how string) (p *bench.Proc, undo func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	run := s.runs[len(s.runs)-1]
	run.ended, s.down = how, true
	return s.proc, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		run.ended, s.down = "", false
	}
}

// exitedUnexpectedly names the processes, of every start, that exited without the fault script
// ending them.
func (c *cluster) exitedUnexpectedly() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []error
	for _, s := range c.slots() {
		for _, run := range s.runs {
			if run.ended == "" && run.proc.Exited() {
				out = append(out, run.proc.Failure())
			}
		}
	}
	return out
}

// processes is every process started so far and how it ended, for the judge.
func (c *cluster) processes() []procExit {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []procExit
	for _, s := range c.slots() {
		_, edge := strings.CutPrefix(s.name, "edge")
		for _, run := range s.runs {
			pe := procExit{Name: run.proc.Name, Edge: edge, Ended: run.ended, Started: run.started}
			if run.proc.Exited() {
				pe.Exited, pe.ExitedAt, pe.Err = true, run.exitedAt, fmt.Sprint(run.proc.Err())
			}
			out = append(out, pe)
		}
	}
	return out
}
