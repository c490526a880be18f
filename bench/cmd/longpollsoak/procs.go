package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// supervisor owns the processes the soak starts (the cell, edge, the clients) and stops them
// however the soak ends.
type supervisor struct {
	dir string

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	out  string // stdout
	log  string // stderr
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// start runs argv in a process group of its own, so that a terminal's Ctrl-C reaches only the
// soak, which then stops everything in order, with stdin from stdin (may be nil), stdout in
// <dir>/<name>.out and stderr in <dir>/<name>.log.
func (s *supervisor) start(name string, argv []string, stdin []byte) (*proc, error) {
	p := &proc{
		name: name,
		out:  filepath.Join(s.dir, name+".out"),
		log:  filepath.Join(s.dir, name+".log"),
		done: make(chan struct{}),
	}
	outFile, err := os.Create(p.out)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", p.out, err)
	}
	logFile, err := os.Create(p.log)
	if err != nil {
		outFile.Close()
		return nil, fmt.Errorf("create %s: %w", p.log, err)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = outFile, logFile
	if stdin != nil {
		p.cmd.Stdin = bytes.NewReader(stdin)
	}
	// Pdeathsig: a soak killed with SIGKILL still takes its children with it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		outFile.Close()
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		outFile.Close()
		logFile.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// failure describes an early exit with the end of the process's stderr.
func (p *proc) failure() error {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return fmt.Errorf("%s exited (%v); the end of its stderr:\n%s", p.name, p.err, bytes.TrimSpace(b))
}

// stopAll stops the processes in reverse start order: SIGTERM to the group, SIGKILL after 5 s.
func (s *supervisor) stopAll() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		pgid := -p.pid()
		if !p.exited() {
			_ = syscall.Kill(pgid, syscall.SIGTERM)
		}
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			fmt.Fprintf(os.Stderr, "longpollsoak: %s did not stop in 5s, killing it\n", p.name)
		}
		if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			fmt.Fprintf(os.Stderr, "longpollsoak: kill %s: %v\n", p.name, err)
		}
		<-p.done
	}
}
