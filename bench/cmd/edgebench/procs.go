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

// supervisor owns every long-running process the harness starts and stops them all, whatever
// way the harness ends (error, Ctrl-C, normal exit).
type supervisor struct {
	dir string

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, once done is closed
}

// start runs argv in its own process group (so stopping it also stops children such as nginx's
// worker, and a terminal's Ctrl-C reaches only the harness, which then stops everything in
// order). Its output goes to <dir>/<name>.log.
func (s *supervisor) start(name string, argv []string) (*proc, error) {
	return s.startEnv(name, argv, nil)
}

// startEnv is start with env added to the harness's environment.
func (s *supervisor) startEnv(name string, argv, env []string) (*proc, error) {
	logPath := filepath.Join(s.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", logPath, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	// Pdeathsig: a harness killed with SIGKILL still takes its servers with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// names are the processes started so far, in start order.
func (s *supervisor) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.procs))
	for i, p := range s.procs {
		out[i] = p.name
	}
	return out
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

// failure describes an early exit with the end of the process's log, for the error message.
func (p *proc) failure() error {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return fmt.Errorf("%s exited (%v); the end of its output:\n%s", p.name, p.err, bytes.TrimSpace(b))
}

// stopAll stops processes in reverse start order: SIGTERM to the group, then SIGKILL to whatever
// is still there after a grace period.
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
			fmt.Fprintf(os.Stderr, "edgebench: %s did not stop in 5s, killing it\n", p.name)
		}
		// The group may outlive its leader (an orphaned nginx worker): kill what remains.
		if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			fmt.Fprintf(os.Stderr, "edgebench: kill %s: %v\n", p.name, err)
		}
		<-p.done
	}
}
