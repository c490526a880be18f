package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long StopAll waits after SIGTERM before it kills a process group.
const stopGrace = 5 * time.Second

// Supervisor owns the long-running processes a benchmark command starts (servers, agents,
// clients) and stops them all, whatever way the command ends (error, Ctrl-C, normal exit):
// the command defers StopAll right after making it. The zero value with Dir set is ready to use.
type Supervisor struct {
	Dir  string // where each process's output files go
	Name string // the command's name, to prefix the supervisor's own messages (e.g. "edgebench")

	mu    sync.Mutex
	procs []*Proc
}

// StartOptions are what Start may add to a process beyond its argv.
type StartOptions struct {
	Env   []string // added to the command's own environment (os.Environ())
	Stdin []byte   // the process's stdin; nil for none
	// Stdout sends stdout to <Dir>/<name>.out, apart from stderr in <Dir>/<name>.log, for
	// output the command reads back (addresses printed by a server, a client's results).
	// Without it both go to the .log file.
	Stdout bool
}

// Proc is a process started by a Supervisor.
type Proc struct {
	Name string
	Log  string // the file with its stderr, and its stdout unless StartOptions.Stdout
	Out  string // the file with its stdout with StartOptions.Stdout; "" without

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, once done is closed
}

// Start runs argv in its own process group, so that stopping it also stops its children (such
// as nginx's worker) and a terminal's Ctrl-C reaches only the command, which then stops
// everything in order. The process gets SIGKILL if the command dies, even of SIGKILL itself
// (Pdeathsig). Its output goes to <Dir>/<name>.log (and .out, see StartOptions.Stdout).
func (s *Supervisor) Start(name string, argv []string, o StartOptions) (*Proc, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("start %s: no command", name)
	}
	p := &Proc{Name: name, Log: filepath.Join(s.Dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.Log)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", p.Log, err)
	}
	files := []*os.File{logFile}
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if o.Stdout {
		p.Out = filepath.Join(s.Dir, name+".out")
		outFile, err := os.Create(p.Out)
		if err != nil {
			closeFiles()
			return nil, fmt.Errorf("create %s: %w", p.Out, err)
		}
		files = append(files, outFile)
		p.cmd.Stdout = outFile
	}
	if o.Stdin != nil {
		p.cmd.Stdin = bytes.NewReader(o.Stdin)
	}
	if len(o.Env) > 0 {
		p.cmd.Env = append(os.Environ(), o.Env...)
	}
	ownGroup(p.cmd)
	if err := p.cmd.Start(); err != nil {
		closeFiles()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		closeFiles()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// Names are the names of the processes started and not yet stopped, in start order.
func (s *Supervisor) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.procs))
	for i, p := range s.procs {
		out[i] = p.Name
	}
	return out
}

// StopAll stops the processes in reverse start order: SIGTERM to the group, SIGKILL after 5 s,
// and then SIGKILL to the group anyway, since the group may outlive its leader (an orphaned
// nginx worker). It returns once every process has been waited for.
func (s *Supervisor) StopAll() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		pgid := p.PID()
		if !p.Exited() {
			_ = signalGroup(pgid, syscall.SIGTERM)
		}
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			s.warnf("%s did not stop in %s, killing it", p.Name, stopGrace)
		}
		if err := signalGroup(pgid, syscall.SIGKILL); err != nil {
			s.warnf("kill %s: %v", p.Name, err)
		}
		<-p.done
	}
}

func (s *Supervisor) warnf(format string, args ...any) {
	name := s.Name
	if name == "" {
		name = "supervisor"
	}
	fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...)
}

// PID is the process's id, which is also its process group's.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and its output files are closed.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether Done is closed.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the process's exit error (nil for status 0); valid only once Done is closed.
func (p *Proc) Err() error { return p.err }

// Failure describes an early exit with the last 2000 bytes of the process's log, for an error
// message; call it once the process has exited.
func (p *Proc) Failure() error {
	what := "output"
	if p.Out != "" {
		what = "stderr"
	}
	return fmt.Errorf("%s exited (%v); the end of its %s:\n%s", p.Name, p.err, what, p.Tail(2000))
}

// Output is what the process has written to its log so far (stderr, and stdout unless
// StartOptions.Stdout), for a command that waits for a line or reads what a server logged.
func (p *Proc) Output() string {
	b, _ := os.ReadFile(p.Log)
	return string(b)
}

// Tail is the last n bytes of Output, trimmed, for an error message.
func (p *Proc) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

// WaitReady calls check every 50 ms until it reports ready, fails, the process exits (its
// Failure), or timeout or ctx ends.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ready, err := check()
		switch {
		case err != nil:
			return err
		case ready:
			return nil
		case p.Exited():
			return p.Failure()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", p.Name, ctx.Err())
		case <-p.Done():
		case <-tick.C:
		}
	}
}

// Signal sends sig to the process's group (a chaos test's kill -9 is Signal(syscall.SIGKILL));
// the process stays in the supervisor's list, so StopAll still waits for it. A process that has
// already exited is no error.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := signalGroup(p.PID(), sig); err != nil {
		return fmt.Errorf("signal %s: %w", p.Name, err)
	}
	return nil
}
